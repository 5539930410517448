// ModelStateTest.cpp: the state any lifecycle model gives a sequence (owners, flags, list
// slots, distinct and dead names), and sequences of a model that is not built in: read with
// `# model:` beside the file, validated, generated, renumbered, shrunk and concatenated.
#include "model/ModelState.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "base/InputError.h"
#include "model/Generator.h"
#include "model/LifecycleModel.h"
#include "model/ModelFacts.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"
#include "tests/ScratchDir.h"
#include "tests/TestOps.h"
#include "tests/model/Printers.h"

namespace gpufuzz {
namespace {

using testing::ScratchDir;
using testing::testOp;

// The contract's example, with a list slot, a word argument, a two-letter prefix and a buf that
// has a default release.
constexpr std::string_view kLab = R"(# gpufuzz model
model lab
note owners, flags, a list slot and a word argument

resource pool    prefix p
resource stream  prefix s
resource buf     prefix b  owner pool
resource event   prefix ev

op pool_create    -> pool
op pool_destroy   pool!
op stream_create  -> stream
op stream_destroy stream!
op alloc          pool stream -> buf   bytes=256 (1..2147483648)  weight:3
op free           buf!
op event_create   -> event
op event_destroy  event!
op record         event stream         +recorded(event)
op wait           stream event*
op sync           stream               -pending(stream)
op launch         stream buf  grid=1 (1..65535) mode=async {async|sync}  +pending(stream)

release buf event stream pool
)";

const LifecycleModel& lab() {
  static const LifecycleModel& m = internModel(parseModel(kLab, "lab.model"));
  return m;
}

Operation labOp(std::string_view name, std::vector<std::string> names,
                std::initializer_list<std::pair<std::string_view, uint64_t>> args = {}) {
  return testOp(lab(), name, std::move(names), args);
}

std::size_t indexOf(const ModelState& state, std::string_view name) {
  const ModelState::Name* n = state.find(name);
  if (n == nullptr) throw std::invalid_argument("no name " + std::string(name));
  return static_cast<std::size_t>(n - state.names().data());
}

ModelState after(const std::vector<Operation>& ops, const LifecycleModel& model = lab()) {
  ModelState state(model);
  for (const Operation& o : ops)
    state.apply(o);
  return state;
}

std::vector<Operation> poolStreamBuf() {
  return {labOp("pool_create", {"p0"}), labOp("stream_create", {"s0"}),
          labOp("alloc", {"p0", "s0", "b0"})};
}

TEST(ModelState, AnOwnedNameBelongsToItsOwnerAndOutlivesIt) {
  ModelState state = after(poolStreamBuf());
  const std::size_t p0 = indexOf(state, "p0"), b0 = indexOf(state, "b0");
  EXPECT_EQ(state.names()[b0].owner, std::optional<std::size_t>{p0});
  EXPECT_EQ(state.names()[b0].kind, *lab().kind("buf"));
  EXPECT_FALSE(state.names()[p0].owner.has_value()) << "a pool has no owner";
  EXPECT_FALSE(state.names()[indexOf(state, "s0")].owner.has_value())
      << "the stream slot of alloc owns nothing";
  EXPECT_EQ(state.aliveOwnedBy(p0), 1u);
  EXPECT_EQ(state.names()[b0].introducedAt, 2u);

  // Ending an owner never ends what it owns: b0 stays alive and usable.
  state.apply(labOp("pool_destroy", {"p0"}));
  EXPECT_FALSE(state.names()[p0].alive);
  EXPECT_EQ(state.names()[p0].endedAt, std::optional<std::size_t>{3});
  EXPECT_TRUE(state.names()[b0].alive);
  EXPECT_EQ(state.names()[b0].owner, std::optional<std::size_t>{p0});
  EXPECT_EQ(state.aliveOwnedBy(p0), 1u) << "b0 outlived its pool";
  EXPECT_TRUE(state.check(labOp("launch", {"s0", "b0"})).ok());
  state.apply(labOp("free", {"b0"}));
  EXPECT_EQ(state.aliveOwnedBy(p0), 0u);
  EXPECT_EQ(state.applied(), 5u);
}

TEST(ModelState, TheOwnerIsTheFirstOwnerSlotThatTheOperationDoesNotEnd) {
  const LifecycleModel& m = internModel(
      parseModel("model own\nresource pool\nresource buf owner pool\nop mk -> pool\n"
                 "op move pool! pool -> buf\nop both -> pool buf\nop twice pool pool -> buf\n"
                 "release buf pool\n",
                 "own.model"));
  ModelState state = after(
      {testOp(m, "mk", {"p0"}), testOp(m, "mk", {"p1"}), testOp(m, "move", {"p0", "p1", "b0"}),
       testOp(m, "both", {"p2", "b1"}), testOp(m, "twice", {"p2", "p1", "b2"})},
      m);
  EXPECT_EQ(state.names()[indexOf(state, "b0")].owner, indexOf(state, "p1"));
  EXPECT_FALSE(state.names()[indexOf(state, "p0")].alive);
  EXPECT_EQ(state.names()[indexOf(state, "b1")].owner, indexOf(state, "p2"))
      << "an owner introduced by the same operation";
  EXPECT_EQ(state.names()[indexOf(state, "b2")].owner, indexOf(state, "p2"));
}

TEST(ModelState, FlagsStartClearedAndFollowEffects) {
  ModelState state = after(poolStreamBuf());
  state.apply(labOp("stream_create", {"s1"}));
  const std::size_t s0 = indexOf(state, "s0"), s1 = indexOf(state, "s1");
  const std::size_t pending = 0;  // stream's only flag
  ASSERT_EQ(lab().resources[*lab().kind("stream")].flags, std::vector<std::string>{"pending"});
  EXPECT_FALSE(state.flag(s0, pending));
  state.apply(labOp("launch", {"s0", "b0"}, {{"mode", 1}}));
  EXPECT_TRUE(state.flag(s0, pending));
  EXPECT_FALSE(state.flag(s1, pending)) << "only the operation's stream";
  state.apply(labOp("launch", {"s0", "b0"}));
  EXPECT_TRUE(state.flag(s0, pending)) << "setting a set flag keeps it set";
  state.apply(labOp("sync", {"s1"}));
  EXPECT_TRUE(state.flag(s0, pending));
  state.apply(labOp("sync", {"s0"}));
  EXPECT_FALSE(state.flag(s0, pending));
  EXPECT_EQ(state.names()[s0].flags, 0u);

  state.apply(labOp("event_create", {"ev0"}));
  const std::size_t ev0 = indexOf(state, "ev0");
  EXPECT_FALSE(state.flag(ev0, 0));
  state.apply(labOp("record", {"ev0", "s1"}));
  EXPECT_TRUE(state.flag(ev0, 0)) << "record sets recorded of its event, not its stream";
  EXPECT_FALSE(state.flag(s1, pending));
}

TEST(ModelState, AListSlotTakesZeroToFourLiveNamesAndEndsNone) {
  ModelState state = after({labOp("stream_create", {"s0"}), labOp("stream_create", {"s1"})});
  for (const char* e : {"ev0", "ev1", "ev2", "ev3", "ev4"})
    state.apply(labOp("event_create", {e}));
  EXPECT_TRUE(state.check(labOp("wait", {"s0"})).ok());
  EXPECT_TRUE(state.check(labOp("wait", {"s0", "ev0", "ev1", "ev2", "ev3"})).ok());
  const ModelState::Verdict five =
      state.check(labOp("wait", {"s0", "ev0", "ev1", "ev2", "ev3", "ev4"}));
  EXPECT_EQ(five.reason, "wait takes 1..5 names, got 6: wait S [EV...]");
  EXPECT_EQ(state.check(labOp("wait", {})).reason, "wait takes 1..5 names, got 0: wait S [EV...]");

  const ModelState::Verdict wrongKind = state.check(labOp("wait", {"s0", "ev0", "s1"}));
  EXPECT_EQ(wrongKind.reason, "s1 is a stream, wait needs an event");
  EXPECT_EQ(wrongKind.nameIndex, 2);
  const ModelState::Verdict twice = state.check(labOp("wait", {"s0", "ev1", "ev1"}));
  EXPECT_EQ(twice.reason, "name ev1 is given twice: the names of one operation are distinct");
  EXPECT_EQ(twice.nameIndex, 2);

  state.apply(labOp("wait", {"s0", "ev0", "ev2"}));
  EXPECT_TRUE(state.names()[indexOf(state, "ev0")].alive) << "a list slot ends nothing";
  state.apply(labOp("event_destroy", {"ev2"}));
  const ModelState::Verdict dead = state.check(labOp("wait", {"s1", "ev0", "ev2"}));
  EXPECT_EQ(dead.reason, "ev2 is not alive: it was destroyed");
  EXPECT_EQ(dead.nameIndex, 2);
}

TEST(ModelState, NamesOfOneOperationAreDistinct) {
  ModelState state = after({labOp("pool_create", {"p0"}), labOp("stream_create", {"s0"})});
  const ModelState::Verdict v = state.check(labOp("alloc", {"p0", "s0", "p0"}));
  EXPECT_EQ(v.reason, "name p0 is given twice: the names of one operation are distinct");
  EXPECT_EQ(v.nameIndex, 2);
  EXPECT_FALSE(state.check(labOp("alloc", {"p0", "p0", "b0"})).ok());
}

TEST(ModelState, DeadUnknownAndReusedNamesAndWrongKindsAreRefused) {
  ModelState state = after(poolStreamBuf());
  state.apply(labOp("free", {"b0"}));
  const auto reason = [&](const Operation& o) { return state.check(o).reason; };
  EXPECT_EQ(reason(labOp("launch", {"s0", "b0"})), "b0 is not alive: it was destroyed");
  EXPECT_EQ(state.check(labOp("launch", {"s0", "b0"})).nameIndex, 1);
  EXPECT_EQ(reason(labOp("launch", {"s0", "b9"})), "b9 is not alive: nothing created it");
  EXPECT_EQ(reason(labOp("alloc", {"p0", "s0", "b0"})),
            "name b0 was already used: a name is introduced once, never reused");
  EXPECT_EQ(reason(labOp("pool_create", {"s0"})),
            "name s0 was already used: a name is introduced once, never reused");
  EXPECT_EQ(reason(labOp("alloc", {"s0", "p0", "b1"})), "s0 is a stream, alloc needs a pool");
  EXPECT_EQ(reason(labOp("record", {"s0", "s0"})),
            "name s0 is given twice: the names of one operation are distinct");
  EXPECT_EQ(reason(labOp("alloc", {"p0", "s0"})),
            "alloc takes 3 names, got 2: alloc P S B [bytes=1..2147483648]");
  EXPECT_EQ(reason(labOp("alloc", {"p0", "s0", "B1"})).rfind("bad name 'B1'", 0), 0u);
  EXPECT_EQ(reason(labOp("alloc", {"p0", "s0", "b1"}, {{"bytes", 0}})),
            "bytes=0 is out of bounds: bytes takes 1..2147483648");
  EXPECT_EQ(
      reason(labOp("launch", {"s0", "b1"}, {{"mode", 2}})).rfind("mode=2 is out of bounds", 0), 0u);
  EXPECT_TRUE(state.check(labOp("alloc", {"p0", "s0", "b1"}, {{"bytes", 2147483648}})).ok());
  const ModelState::Verdict foreign = state.check(testOp(builtinModel("all"), "create", {"r0"}));
  EXPECT_NE(foreign.reason.find("not in model lab"), std::string::npos) << foreign.reason;
}

TEST(ModelState, ApplyRefusesAnInvalidOperationAndChangesNothing) {
  ModelState state = after(poolStreamBuf());
  EXPECT_THROW(state.apply(labOp("alloc", {"p0", "s9", "b1"})), std::invalid_argument);
  EXPECT_EQ(state.find("b1"), nullptr) << "a refused alloc must not take its buffer's name";
  EXPECT_EQ(state.applied(), 3u);
  EXPECT_EQ(state.alive(*lab().kind("buf")).size(), 1u);
}

TEST(ModelState, AliveListsEachKindInCreationOrder) {
  ModelState state = after({labOp("pool_create", {"pz"}), labOp("pool_create", {"pa"}),
                            labOp("pool_create", {"pm"}), labOp("pool_destroy", {"pa"})});
  std::vector<std::string> alive;
  for (std::size_t i : state.alive(*lab().kind("pool")))
    alive.push_back(state.names()[i].name);
  EXPECT_EQ(alive, (std::vector<std::string>{"pz", "pm"}));
  EXPECT_TRUE(state.alive(*lab().kind("stream")).empty());
  EXPECT_EQ(state.names().size(), 3u);
}

// Sequences of a model that is not built in.

struct LabFiles {
  ScratchDir dir;
  std::string model = dir.write("lab.model", std::string(kLab)).string();
  std::string seq(const std::string& text, const std::string& name = "x.seq") const {
    return dir.write(name, text).string();
  }
};

TEST(ModelSequence, TheModelDirectiveIsAPathRelativeToTheSequenceFile) {
  LabFiles files;
  const std::string path = files.seq(
      "# gpufuzz sequence\n# model: ./lab.model\npool_create p0\nstream_create s0\n"
      "alloc p0 s0 b0 bytes=64\nwait s0\nlaunch s0 b0 mode=sync\n");
  const Sequence s = loadSequence(path);
  ASSERT_NE(s.model, nullptr);
  EXPECT_EQ(s.model->name, "lab");
  EXPECT_FALSE(s.model->builtin);
  EXPECT_EQ(s.model->text, kLab);
  EXPECT_EQ(s.directives.model, "./lab.model");
  EXPECT_EQ(&s.lifecycle(), s.model);
  ASSERT_EQ(s.ops.size(), 5u);
  for (const Operation& o : s.ops)
    EXPECT_EQ(o.form->model, s.model) << operationText(o);
  EXPECT_EQ(s.ops[2].arg("bytes"), 64u);
  EXPECT_EQ(s.ops[4].arg("mode"), 1u);
  EXPECT_EQ(loadSequence(path).model, s.model) << "one model per file, interned";
  EXPECT_EQ(s.model, &resolveModel(files.model)) << "the same file, however it is reached";

  // Printing keeps the directive; the printed file replays as it was.
  const std::string text = printSequence(s);
  EXPECT_NE(text.find("# model: ./lab.model\n"), std::string::npos) << text;
  EXPECT_NE(text.find("launch s0 b0 mode=sync\n"), std::string::npos) << text;
  const Sequence back = loadSequence(files.seq(text, "back.seq"));
  EXPECT_EQ(back.ops, s.ops);
  EXPECT_EQ(back.model, s.model);

  // From another folder, and with no "./": still relative to the sequence file, not the cwd.
  std::filesystem::create_directories(files.dir.path() / "sub");
  const Sequence nested =
      loadSequence(files.seq("# model: ../lab.model\npool_create p0\n", "sub/y.seq"));
  EXPECT_EQ(nested.model, s.model);
  const Sequence bare = loadSequence(files.seq("# model: lab.model\npool_create p0\n", "z.seq"));
  EXPECT_EQ(bare.model, s.model);
  // An override wins over the directive.
  EXPECT_EQ(
      loadSequence(files.seq("# model: lab.model\ncreate r0\n", "o.seq"), &builtinModel("renderer"))
          .model,
      &builtinModel("renderer"));
}

struct PlacedError {
  std::string text;
  int line, column;
  std::string message;
};

TEST(ModelSequence, ValidationIsTheModelsAndPlacesEveryError) {
  LabFiles files;
  const std::string head = "# gpufuzz sequence\n# model: ./lab.model\n";  // lines 1-2
  const std::vector<PlacedError> cases = {
      {head + "pool_create p0\ndraw p0\n", 4, 1,
       "unknown operation 'draw' in model lab: expected one of pool_create, pool_destroy, "
       "stream_create"},
      {head + "pool_create p0\nstream_create s0\nalloc s0 p0 b0\n", 5, 7,
       "s0 is a stream, alloc needs a pool"},
      {head + "pool_create p0\npool_destroy p0\nstream_create s0\nalloc p0 s0 b0\n", 6, 7,
       "p0 is not alive: it was destroyed"},
      {head + "stream_create s0\nwait s0 ev0\n", 4, 9, "ev0 is not alive: nothing created it"},
      {head + "pool_create p0\nstream_create s0\nalloc p0 s0 b0 bytes=0\n", 5, 22,
       "bytes=0 is out of bounds: bytes takes an integer in 1..2147483648"},
      {head + "pool_create p0\nstream_create s0\nalloc p0 s0\n", 5, 13,
       "missing name; the form is alloc P S B [bytes=1..2147483648]"},
      {head + "stream_create s0\nsync s0 grid=1\n", 4, 9, "sync takes no key=value arguments"},
      {head + "stream_create s0\nwait s0 s1 s2 s3 s4 s5\n", 4, 21, "extra name 's5'"},
      {"# model: ./missing.model\npool_create p0\n", 1, 10, "missing.model"},
      {"# gpufuzz sequence\n# backend: sim\n# model: ./missing.model\n", 3, 10,
       "cannot open the model file"},
      {"# model: ./sub\n", 1, 10, "is a directory, not a model file"},
  };
  std::filesystem::create_directories(files.dir.path() / "sub");
  for (const PlacedError& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string path = files.seq(c.text);
    try {
      loadSequence(path);
      ADD_FAILURE() << "loaded without error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), path);
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST(ModelSequence, AModelFileThatDoesNotParseIsAnErrorAtTheDirectiveNamingItsOwnPlace) {
  LabFiles files;
  files.dir.write("bad.model", "model bad\nresource pool\nop make -> heap\nrelease pool\n");
  const std::string path = files.seq("# note: x\n# model: ./bad.model\n");
  try {
    loadSequence(path);
    FAIL() << "loaded without error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2) << e.what();
    EXPECT_EQ(e.column(), 10) << e.what();
    EXPECT_NE(e.message().find("bad.model:3:12: slot of undeclared kind 'heap'"), std::string::npos)
        << e.what();
  }
}

TEST(ModelSequence, ValidateSequencePlacesTheFirstViolationOfTheModel) {
  Sequence s = parseSequence("pool_create p0\npool_destroy p0\n", "v.seq", &lab());
  EXPECT_NO_THROW(validateSequence(s, "v.seq"));
  Operation late = labOp("pool_destroy", {"p0"});
  late.line = 7;
  s.ops.push_back(late);
  try {
    validateSequence(s, "v.seq");
    FAIL() << "validated";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "v.seq:7:1: pool_destroy p0: p0 is not alive: it was destroyed");
  }
  // Under `all` (a null model), the same operations are unknown.
  Sequence foreign;
  foreign.ops = {labOp("pool_create", {"p0"})};
  EXPECT_THROW(validateSequence(foreign, "v.seq"), InputError);
  foreign.model = &lab();
  EXPECT_NO_THROW(validateSequence(foreign, "v.seq"));
}

bool hasPrefixAndNumber(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

TEST(ModelGenerator, GeneratesValidSequencesOfTheModelWithEveryShape) {
  const GeneratorConfig config{&lab(), 30};
  std::set<std::string> opsSeen;
  int set = 0, clearedWhileSet = 0, endedWhilePending = 0, ownerEndedFirst = 0, emptyLists = 0,
      longLists = 0, sync = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const Sequence s = generateSequence(config, seed);
    ASSERT_EQ(s.model, &lab());
    EXPECT_EQ(generateSequence(config, seed).ops, s.ops) << "the same seed, the same sequence";
    ASSERT_TRUE(isValid(s)) << printSequence(s);
    EXPECT_LE(s.ops.size(), 30u);
    ModelState state(lab());
    std::vector<int> next(lab().resources.size(), 0);
    for (const Operation& o : s.ops) {
      opsSeen.insert(std::string(o.name()));
      for (std::size_t i = 0; i < o.names.size(); ++i) {
        const std::size_t kind = o.kindOfName(i);
        const std::string& prefix = lab().resources[kind].prefix;
        EXPECT_TRUE(hasPrefixAndNumber(o.names[i], prefix)) << operationText(o);
        if (o.useOfName(i) == SlotUse::Introduce) {
          EXPECT_EQ(o.names[i], prefix + std::to_string(next[kind]++)) << operationText(o);
        }
      }
      for (const EffectDecl& e : o.form->effects) {
        const std::size_t n =
            indexOf(state, o.names[nameIndexOfSlot(*o.form, e.slot, o.names.size())]);
        if (e.set) ++set;
        if (!e.set && state.flag(n, e.flag)) ++clearedWhileSet;
      }
      if (o.name() == "stream_destroy" && state.flag(indexOf(state, o.names[0]), 0)) {
        ++endedWhilePending;
      }
      if (o.name() == "pool_destroy" && state.aliveOwnedBy(indexOf(state, o.names[0])) > 0) {
        ++ownerEndedFirst;
      }
      if (o.name() == "wait" && o.names.size() == 1) ++emptyLists;
      if (o.name() == "wait" && o.names.size() >= 3) ++longLists;
      if (o.name() == "launch" && o.arg("mode") == 1) ++sync;
      state.apply(o);
    }
  }
  std::set<std::string> all;
  for (const OpDecl& d : lab().ops)
    all.insert(d.name);
  EXPECT_EQ(opsSeen, all) << "every operation eventually occurs";
  EXPECT_GT(set, 200);
  EXPECT_GT(clearedWhileSet, 10) << "flags set, then cleared";
  EXPECT_GT(endedWhilePending, 8) << "a stream destroyed while pending";
  EXPECT_GT(ownerEndedFirst, 50) << "a pool destroyed while a buf of it is alive";
  EXPECT_GT(emptyLists, 100);
  EXPECT_GT(longLists, 25);
  EXPECT_GT(sync, 20) << "word arguments take their other words";
}

TEST(ModelGenerator, PrintedSequencesOfTheModelParseBack) {
  const GeneratorConfig config{&lab(), 30};
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Sequence s = generateSequence(config, seed);
    const Sequence back = parseSequence(printSequence(s), "g.seq", &lab());
    EXPECT_EQ(back.ops, s.ops) << printSequence(s);
  }
}

TEST(ModelSequence, RenumberingUsesEachKindsPrefix) {
  const Sequence s = parseSequence(
      "pool_create x\nstream_create y\nalloc x y z\nevent_create q\nwait y q\npool_create w\n"
      "alloc w y zz bytes=3\nrecord q y\n",
      "t.seq", &lab());
  EXPECT_EQ(normalizedOperations(s),
            "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nevent_create ev0\nwait s0 ev0\n"
            "pool_create p1\nalloc p1 s0 b1 bytes=3\nrecord ev0 s0\n");
  const Sequence r = renumbered(s);
  EXPECT_EQ(r.model, &lab());
  EXPECT_TRUE(isValid(r));
  EXPECT_EQ(renumbered(r).ops, r.ops);
}

TEST(ModelSequence, RemovingANameInAWaitListKeepsTheOperationWithoutIt) {
  const Sequence s = parseSequence(
      "stream_create s0\nevent_create ev0\nevent_create ev1\nwait s0 ev0 ev1\nwait s0 ev1\n"
      "sync s0\n",
      "t.seq", &lab());
  // ev1 fills only list slots: the waits stay, one with ev0 alone and one with no event.
  EXPECT_EQ(normalizedOperations(removeOperation(s, 2)),
            "stream_create s0\nevent_create ev0\nwait s0 ev0\nwait s0\nsync s0\n");
  EXPECT_EQ(removalSet(s, 2), (std::vector<std::size_t>{2}));
  const std::optional<Sequence> range = removeRange(s, 1, 2);
  ASSERT_TRUE(range);
  EXPECT_EQ(normalizedOperations(*range), "stream_create s0\nwait s0\nwait s0\nsync s0\n");
  // A name in a slot of its own still takes its operations with it.
  EXPECT_EQ(normalizedOperations(removeOperation(s, 0)), "event_create ev0\nevent_create ev1\n");
}

TEST(ModelSequence, ShrinkCandidatesStayValidUnderTheModel) {
  const Sequence s = parseSequence(
      "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nlaunch s0 b0 grid=7\nsync s0\n"
      "pool_destroy p0\nfree b0\n",
      "t.seq", &lab());
  // Removing the pool removes what its buf did; the stream's own operations stay.
  EXPECT_EQ(normalizedOperations(removeOperation(s, 0)), "stream_create s0\nsync s0\n");
  EXPECT_EQ(removeOperation(s, 0).model, &lab());
  bool simplified = false;
  for (const auto& [edit, candidate] : shrinkCandidates(s)) {
    EXPECT_TRUE(isValid(candidate)) << edit.describe(s);
    EXPECT_EQ(candidate.model, &lab()) << edit.describe(s);
    simplified = simplified || (edit.kind == Edit::Kind::Simplify && edit.argument == "grid");
  }
  EXPECT_TRUE(simplified);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const Sequence g = generateSequence(GeneratorConfig{&lab(), 20}, seed);
    for (const auto& [edit, candidate] : shrinkCandidates(g)) {
      EXPECT_TRUE(isValid(candidate)) << printSequence(g) << edit.describe(g);
    }
  }
}

// What each step does in the model's terms: the roles causes count and the text explanations
// print.
TEST(ModelFacts, RolesAndTextsSpeakTheModelsWords) {
  const Sequence s = parseSequence(
      "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nalloc p0 s0 b1\nlaunch s0 b0\n"
      "event_create ev0\nwait s0 ev0\npool_destroy p0\nstream_destroy s0\nfree b0\n",
      "t.seq", &lab());
  const std::vector<ModelStep> steps = modelFacts(s);
  ASSERT_EQ(steps.size(), s.ops.size());
  EXPECT_EQ(steps[0].role, "introduces-pool");
  EXPECT_EQ(steps[0].text, "introduces pool p0");
  EXPECT_EQ(steps[2].role, "introduces-buf");
  EXPECT_EQ(steps[4].role, "sets-pending-stream");
  EXPECT_EQ(steps[6].role, "uses-stream-pending") << "a use that sees a flag says so";
  EXPECT_EQ(steps[7].role, "ends-pool-owning-buf");
  EXPECT_EQ(steps[7].text, "ends pool p0 while 2 buf of it are alive (b0, b1)");
  EXPECT_EQ(steps[8].role, "ends-stream-pending");
  EXPECT_EQ(steps[9].role, "ends-buf");
  EXPECT_EQ(steps[9].text, "ends buf b0");
  // Names never enter a role: the same shape under other names has the same roles.
  const Sequence renamed = renumbered(
      parseSequence("pool_create x\nstream_create y\nalloc x y z\nalloc x y w\nlaunch y z\n"
                    "event_create q\nwait y q\npool_destroy x\nstream_destroy y\nfree z\n",
                    "u.seq", &lab()));
  const std::vector<ModelStep> again = modelFacts(renamed);
  for (std::size_t i = 0; i < steps.size(); ++i)
    EXPECT_EQ(again[i].role, steps[i].role) << i;
}

TEST(ModelSequence, ConcatenateReleasesLeftoversInTheModelsReleaseOrder) {
  const Sequence first = parseSequence(
      "pool_create a\npool_create c\nstream_create t\nstream_create u\nalloc c t x\n"
      "event_create e\nalloc a u y\nfree x\n",
      "a.seq", &lab());
  const Sequence second = parseSequence("stream_create s0\n", "b.seq", &lab());
  const Sequence whole = concatenate({first, second});
  EXPECT_EQ(whole.model, &lab());
  EXPECT_TRUE(isValid(whole));
  // Leftovers of the first part: buf, then event, then stream, then pool, each in creation
  // order, by each kind's default release with default arguments; the last part keeps its own.
  EXPECT_EQ(normalizedOperations(whole),
            "pool_create p0\npool_create p1\nstream_create s0\nstream_create s1\n"
            "alloc p1 s0 b0\nevent_create ev0\nalloc p0 s1 b1\nfree b0\n"
            "free b1\nevent_destroy ev0\nstream_destroy s0\nstream_destroy s1\n"
            "pool_destroy p0\npool_destroy p1\n"
            "stream_create s2\n");
}

TEST(ModelSequence, ConcatenateLeavesAKindWithNoDefaultReleaseAlive) {
  // The contract's example: `free buf! stream` takes a stream too, so a buf has no default
  // release and stays; its pool is still released.
  const LifecycleModel& streams = internModel(parseModel(
      "model streams\nresource pool prefix p\nresource stream prefix s\n"
      "resource buf prefix b owner pool\nop pool_create -> pool\nop pool_destroy pool!\n"
      "op stream_create -> stream\nop stream_destroy stream!\nop alloc pool stream -> buf\n"
      "op free buf! stream\nrelease buf stream pool\n",
      "streams.model"));
  const Sequence first =
      parseSequence("pool_create p0\nstream_create s0\nalloc p0 s0 b0\n", "a.seq", &streams);
  const Sequence second = parseSequence("pool_create p0\n", "b.seq", &streams);
  const Sequence whole = concatenate({first, second});
  EXPECT_TRUE(isValid(whole));
  EXPECT_EQ(normalizedOperations(whole),
            "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nstream_destroy s0\n"
            "pool_destroy p0\npool_create p1\n");
}

}  // namespace
}  // namespace gpufuzz
