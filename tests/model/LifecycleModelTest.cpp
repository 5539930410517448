// LifecycleModelTest.cpp: the `.model` format (docs/models.md): every rejection rule with its exact
// FILE:LINE:COLUMN, and what a valid model holds (the built-ins, the contract's example, default
// releases, list slots, word arguments).
#include "model/LifecycleModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

#include "base/InputError.h"
#include "model/ModelState.h"
#include "model/Operation.h"
#include "model/Sequence.h"
#include "tests/ProjectPaths.h"
#include "tests/model/Printers.h"

namespace gpufuzz {
namespace {

// A small valid model: lines 1-3 declare, 4-7 are operations, the release line follows. Each
// rejection below breaks one rule of an otherwise valid model, so that without the check the
// model would parse (or fail elsewhere, at another place).
constexpr std::string_view kHead =
    "model t\n"                   // 1
    "resource pool prefix p\n"    // 2
    "resource buf owner pool\n";  // 3
constexpr std::string_view kOps =
    "op pool_create -> pool\n"  // 4
    "op pool_destroy pool!\n"   // 5
    "op alloc pool -> buf\n"    // 6
    "op free buf!\n";           // 7
constexpr std::string_view kRelease = "release buf pool\n";

std::string base() {
  return std::string(kHead) + std::string(kOps) + std::string(kRelease);
}

/// The base model with `line` added as line 8, before the release line (then line 9).
std::string withOp(std::string_view line) {
  return std::string(kHead) + std::string(kOps) + std::string(line) + "\n" + std::string(kRelease);
}

/// The base model's declarations and operations, then `tail` from line 8 on.
std::string withTail(std::string_view tail) {
  return std::string(kHead) + std::string(kOps) + std::string(tail);
}

struct Rejection {
  std::string name;  // the rule, as the test's name
  std::string text;
  int line, column;
  std::string message;  // a part of the message
};

void PrintTo(const Rejection& r, std::ostream* os) {
  *os << r.name;
}

const std::vector<Rejection>& rejections() {
  static const std::vector<Rejection> cases = {
      // Lines and the header.
      {"UnknownWord",
       std::string(kHead) + "  frob pool\n" + std::string(kOps) + "release buf pool\n", 4, 3,
       "unknown word 'frob': a line is 'model', 'note', 'resource', 'op' or 'release'"},
      {"UnknownWordCapitalised", withOp("Op grow pool"), 8, 1, "unknown word 'Op'"},
      {"ModelNotFirst",
       "# gpufuzz model\n\nresource pool prefix p\nmodel t\nresource buf owner pool\n" +
           std::string(kOps) + std::string(kRelease),
       3, 1, "the first declaration must be 'model NAME'"},
      {"SecondModelLine", withTail("model u\nrelease buf pool\n"), 8, 1,
       "a second 'model' line: the model is named once, on line 1"},
      {"ModelNeedsAName", "model\n" + base().substr(8), 1, 1, "'model' needs a NAME"},
      {"BadModelName", "model T1\n" + base().substr(8), 1, 7,
       "bad model name 'T1': names match [a-z][a-z0-9_-]*"},
      {"BadModelNameDot", "model t.x\n" + base().substr(8), 1, 7, "bad model name 't.x'"},
      {"ReservedModelName", "model all\n" + base().substr(8), 1, 7,
       "model name 'all' is reserved for a built-in model"},
      {"ReservedModelNameRenderer", "# gpufuzz model\nmodel renderer\n" + base().substr(8), 2, 7,
       "model name 'renderer' is reserved"},
      {"WordAfterModelName", "model t x\n" + base().substr(8), 1, 9,
       "unexpected 'x' after the name"},
      {"SecondNote", "model t\nnote one\n  note two\n" + base().substr(8), 3, 3,
       "a second 'note' line: the first is on line 2"},
      // Resources.
      {"DuplicateKind",
       std::string(kHead) + "resource pool prefix q\n" + std::string(kOps) + std::string(kRelease),
       4, 10, "duplicate kind 'pool': first declared on line 2"},
      {"BadKind", "model t\nresource Pool\nop a -> pool\nrelease pool\n", 2, 10,
       "bad kind 'Pool': kinds match [a-z][a-z0-9_]*"},
      {"ResourceNeedsAKind", withTail("resource\nrelease buf pool\n"), 8, 1,
       "'resource' needs a KIND"},
      {"UnknownResourceWord", "model t\nresource pool colour red\nop a -> pool\nrelease pool\n", 2,
       15, "unexpected 'colour': expected 'prefix P' or 'owner KIND'"},
      {"PrefixGivenTwice", "model t\nresource pool prefix p prefix q\nop a -> pool\nrelease pool\n",
       2, 24, "'prefix' is given twice"},
      {"PrefixNeedsAValue", "model t\nresource pool prefix\nop a -> pool\nrelease pool\n", 2, 15,
       "'prefix' needs a value"},
      {"BadPrefixUppercase", "model t\nresource pool prefix P\nop a -> pool\nrelease pool\n", 2, 22,
       "bad prefix 'P': prefixes match [a-z]+"},
      {"BadPrefixDigit", "model t\nresource pool prefix p1\nop a -> pool\nrelease pool\n", 2, 22,
       "bad prefix 'p1'"},
      {"DuplicatePrefix",
       "model t\nresource pool prefix p\nresource pipe prefix p\nop a -> pool\nop b -> pipe\n"
       "release pool pipe\n",
       3, 22, "prefix 'p' is already 'pool''s (line 2): prefixes are distinct"},
      {"DuplicateDefaultPrefix",
       "model t\nresource pool\nresource pipe\nop a -> pool\nop b -> pipe\nrelease pool pipe\n", 3,
       10, "prefix 'p' is already 'pool''s (line 2)"},
      {"DefaultPrefixCollidesWithAGivenOne",
       "model t\nresource pool prefix q\nresource queue\nop a -> pool\nop b -> queue\n"
       "release pool queue\n",
       3, 10, "prefix 'q' is already 'pool''s"},
      {"OwnerOfUndeclaredKind",
       "model t\nresource pool\nresource buf owner heap\nop a -> pool\nop b pool -> buf\n"
       "release buf pool\n",
       3, 20, "owner of undeclared kind 'heap': declare it with 'resource heap'"},
      {"SelfOwner", "model t\nresource buf owner buf\nop b -> buf\nrelease buf\n", 2, 20,
       "a kind cannot own itself"},
      {"OwnerCycle",
       "model t\nresource a owner b\nresource b owner a\nop both -> a b\nrelease a b\n", 2, 18,
       "owner cycle: 'a' is owned, through its owners, by itself"},
      {"OwnerCycleOfThree",
       "model t\nresource a owner c\nresource b owner a\nresource c owner b\nop all3 -> a b c\n"
       "release a b c\n",
       2, 18, "owner cycle: 'a'"},
      // Operations and slots.
      {"OpNeedsAName", withOp("op"), 8, 1, "'op' needs a NAME"},
      {"BadOpName", withOp("op Grow pool"), 8, 4, "bad operation name 'Grow'"},
      {"SlotOfUndeclaredKind", withOp("op use heap"), 8, 8,
       "slot of undeclared kind 'heap': declare it with 'resource heap'"},
      {"EndingSlotOfUndeclaredKind", withOp("op use heap!"), 8, 8,
       "slot of undeclared kind 'heap'"},
      {"IntroducedKindUndeclared", withOp("op make -> heap"), 8, 12,
       "slot of undeclared kind 'heap'"},
      {"DuplicateOp", withOp("op free buf!"), 8, 4,
       "duplicate operation 'free': first declared on line 7"},
      {"OpNamedEnd", withOp("op end pool"), 8, 4, "'end' is reserved"},
      {"TwoListSlots", withOp("op wait pool* buf*"), 8, 15,
       "a second KIND* slot: an operation has at most one"},
      {"SlotAfterListSlot", withOp("op wait pool* buf"), 8, 15,
       "slot 'buf' after the list slot: a KIND* slot comes last"},
      {"EndingSlotAfterListSlot", withOp("op wait pool* buf!"), 8, 15, "after the list slot"},
      {"IntroducedKindEnded", withOp("op make -> pool buf!"), 8, 17,
       "an introduced kind takes no '!' or '*': it is new"},
      {"IntroducedKindListed", withOp("op make -> pool buf*"), 8, 17,
       "an introduced kind takes no '!' or '*'"},
      {"ArrowWithoutKind", withOp("op make ->"), 8, 9, "'->' needs the KIND it introduces"},
      {"FirstIntroducedKindEnded", withOp("op make -> pool!"), 8, 12,
       "an introduced kind takes no '!' or '*': it is new"},
      {"ArrowBeforeAnArgument", withOp("op make -> size=1 (1..2)"), 8, 9,
       "'->' needs the KIND it introduces"},
      {"SecondArrow", withOp("op make -> pool -> pool"), 8, 17, "a second '->'"},
      {"UnexpectedSlotToken", withOp("op grow pool 5"), 8, 14, "unexpected '5': expected a slot"},
      {"SlotAfterArguments", withOp("op grow n=1 (0..2) pool"), 8, 20,
       "unexpected 'pool': slots come first"},
      // Arguments.
      {"BadArgKey", withOp("op grow pool Size=1 (0..2)"), 8, 14,
       "bad argument key 'Size': keys match [a-z][a-z0-9_]*"},
      {"DuplicateArgKey", withOp("op grow pool n=1 (0..2) n=1 (0..2)"), 8, 25,
       "duplicate argument key 'n'"},
      {"MissingBounds", withOp("op grow pool n=1"), 8, 17,
       "argument 'n' needs its bounds: (MIN..MAX) or {a|b|c}"},
      {"MissingBoundsBeforeWeight", withOp("op grow pool n=1 weight:2"), 8, 17,
       "argument 'n' needs its bounds"},
      {"MissingDefault", withOp("op grow pool n= (0..2)"), 8, 16, "argument 'n' needs a DEFAULT"},
      {"DefaultOutsideBounds", withOp("op grow pool n=5 (0..2)"), 8, 16,
       "default 5 of 'n' is outside its bounds 0..2"},
      {"DefaultBelowBounds", withOp("op grow pool n=0 (1..2)"), 8, 16,
       "default 0 of 'n' is outside its bounds 1..2"},
      {"MinAboveMax", withOp("op grow pool n=1 (3..2)"), 8, 18,
       "bounds '(3..2)' have MIN above MAX"},
      {"BadBoundsSyntax", withOp("op grow pool n=1 (0-2)"), 8, 18,
       "bad bounds '(0-2)': write (MIN..MAX)"},
      {"UnclosedBounds", withOp("op grow pool n=1 (0..2"), 8, 18, "bad bounds '(0..2'"},
      {"NonIntegerBound", withOp("op grow pool n=1 (0..x)"), 8, 18,
       "MIN and MAX are decimal integers of at most 18446744073709551615"},
      {"NonIntegerDefault", withOp("op grow pool n=x (0..2)"), 8, 16,
       "default 'x' of 'n' is not a decimal integer"},
      {"NegativeDefault", withOp("op grow pool n=-1 (0..2)"), 8, 16, "is not a decimal integer"},
      {"FractionalDefault", withOp("op grow pool n=1.5 (0..2)"), 8, 16, "is not a decimal integer"},
      {"BoundAbove2To64", withOp("op grow pool n=1 (0..18446744073709551616)"), 8, 18,
       "MIN and MAX are decimal integers of at most 18446744073709551615"},
      {"DefaultAbove2To64", withOp("op grow pool n=18446744073709551616 (0..18446744073709551615)"),
       8, 16, "is not a decimal integer of at most 18446744073709551615"},
      {"UnclosedWordList", withOp("op go pool mode=a {a|b"), 8, 19,
       "bad word list '{a|b': write {a|b|c}"},
      {"EmptyWordList", withOp("op go pool mode=a {}"), 8, 19, "bad word list '{}'"},
      {"BadWord", withOp("op go pool mode=a {a|B}"), 8, 19,
       "bad word 'B' in '{a|B}': words match [a-z0-9_-]+"},
      {"EmptyWord", withOp("op go pool mode=a {a||b}"), 8, 19, "bad word '' in '{a||b}'"},
      {"DuplicateWord", withOp("op go pool mode=a {a|b|a}"), 8, 19,
       "word 'a' is listed twice in '{a|b|a}'"},
      {"DefaultNotAWord", withOp("op go pool mode=c {a|b}"), 8, 17,
       "default 'c' of 'mode' is not one of a|b"},
      // Weights.
      {"WeightZero", withOp("op grow pool weight:0"), 8, 14,
       "'weight:0': the weight is an integer in 1..1000000"},
      {"WeightTwice", withOp("op grow pool weight:2 weight:3"), 8, 23, "weight is given twice"},
      {"WeightNotAnInteger", withOp("op grow pool weight:x"), 8, 14,
       "the weight is an integer in 1..1000000"},
      {"WeightFractional", withOp("op grow pool weight:1.5"), 8, 14, "the weight is an integer"},
      {"WeightEmpty", withOp("op grow pool weight:"), 8, 14, "the weight is an integer"},
      // Failures an operation may be marked with (docs/failures.md).
      {"FailsEmpty", withOp("op grow pool fails:"), 8, 14, "fails: needs a word: oom, host-oom"},
      {"FailsUnknownWord", withOp("op grow pool fails:oom|oops"), 8, 24,
       "unknown failure 'oops' in fails:, expected oom, host-oom or lost"},
      {"FailsEmptyWord", withOp("op grow pool fails:oom||lost"), 8, 24, "unknown failure ''"},
      {"FailsWordTwice", withOp("op grow pool fails:oom|lost|oom"), 8, 29,
       "'oom' is given twice in fails:"},
      {"FailsTwice", withOp("op grow pool fails:oom fails:lost"), 8, 24, "fails: is given twice"},
      {"FailsAmongSlots", withOp("op grow fails:oom pool"), 8, 19,
       "slots come first, then key=DEFAULT, weight:N, fails:WORD|WORD and +FLAG(KIND)"},
      // Effects.
      {"EffectWithoutKind", withOp("op grow pool +pending"), 8, 14,
       "bad effect '+pending': write +FLAG(KIND) or -FLAG(KIND)"},
      {"EffectUnclosed", withOp("op grow pool -pending(pool"), 8, 14, "bad effect '-pending(pool'"},
      {"EffectWithoutFlag", withOp("op grow pool +(pool)"), 8, 14,
       "bad flag '': flags match [a-z][a-z0-9_]*"},
      {"EffectBadFlag", withOp("op grow pool +Pending(pool)"), 8, 14, "bad flag 'Pending'"},
      {"FlagOfUndeclaredKind", withOp("op grow pool +pending(heap)"), 8, 14,
       "flag of undeclared kind 'heap'"},
      {"FlagOfAKindWithoutASlot", withOp("op grow pool +pending(buf)"), 8, 14,
       "flag '+pending(buf)': 'grow' has no slot of kind 'buf'"},
      {"FlagOnlyOnAListSlot", withOp("op wait pool* +pending(pool)"), 8, 15,
       "flag '+pending(pool)' names a kind this operation has only as a list"},
      {"FlagSetTwiceByOneOp", withOp("op grow pool +a(pool) -a(pool)"), 8, 23,
       "flag a(pool) is set or cleared twice by one operation"},
      {"FlagSetTwiceAlike", withOp("op grow pool +a(pool) +a(pool)"), 8, 23,
       "is set or cleared twice"},
      // Owners of what an operation introduces.
      {"OwnedKindWithoutOwnerSlot", withOp("op spawn -> buf"), 8, 4,
       "'spawn' introduces a buf, which is owned by a pool: give it a pool slot that it does not "
       "end"},
      {"OwnedKindWithOnlyAnEndingOwnerSlot", withOp("op spawn pool! -> buf"), 8, 4,
       "'spawn' introduces a buf, which is owned by a pool"},
      {"OwnedKindWithOnlyAListedOwner", withOp("op spawn pool* -> buf"), 8, 4,
       "'spawn' introduces a buf, which is owned by a pool"},
      // The whole model.
      {"KindNothingIntroduces",
       "model t\nresource pool\nresource heap prefix h\nop a -> pool\nop b heap\n"
       "release pool heap\n",
       3, 1, "nothing introduces a heap: add an operation with '-> heap'"},
      {"MissingRelease", std::string(kHead) + std::string(kOps.substr(0, kOps.size() - 1)), 7, 1,
       "missing 'release KIND...': say in which order leftovers are released"},
      {"SecondRelease", withTail("release buf pool\nrelease buf pool\n"), 9, 1,
       "a second 'release' line: the first is on line 8"},
      {"KindReleasedTwice", withTail("release buf pool buf\n"), 8, 18,
       "kind 'buf' is released twice: every kind appears once"},
      {"KindMissingFromRelease", withTail("  release buf\n"), 8, 3,
       "release does not name 'pool': every kind appears once"},
      {"ReleaseOfUndeclaredKind", withTail("release buf pool heap\n"), 8, 18,
       "release of undeclared kind 'heap'"},
      {"EmptyModel", "", 1, 1, "empty model: it must begin with 'model NAME'"},
      {"CommentsOnlyModel", "# gpufuzz model\n\n   # nothing here\n", 1, 1, "empty model"},
      {"NoResources", "# gpufuzz model\nmodel t\nop noop\nrelease\n", 2, 1,
       "model 't' declares no resource kind"},
      {"NoOps", "# gpufuzz model\nmodel t\nresource pool\nrelease pool\n", 2, 1,
       "model 't' declares no operation"},
  };
  return cases;
}

class ModelRejection : public ::testing::TestWithParam<Rejection> {};

TEST_P(ModelRejection, IsPlacedAtTheOffendingToken) {
  const Rejection& r = GetParam();
  SCOPED_TRACE(r.text);
  try {
    parseModel(r.text, "t.model");
    FAIL() << "parsed without error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "t.model");
    EXPECT_EQ(e.line(), r.line) << e.what();
    EXPECT_EQ(e.column(), r.column) << e.what();
    EXPECT_NE(e.message().find(r.message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()), "t.model:" + std::to_string(r.line) + ":" +
                                         std::to_string(r.column) + ": " + e.message());
  }
}

INSTANTIATE_TEST_SUITE_P(Rules, ModelRejection, ::testing::ValuesIn(rejections()),
                         [](const ::testing::TestParamInfo<Rejection>& param) {
                           return param.param.name;
                         });

TEST(LifecycleModel, FailsDeclaresTheWordsAnOperationMayBeMarkedWith) {
  const LifecycleModel m = parseModel(
      "model t\nresource pool\nop make -> pool fails:host-oom|oom weight:2\nop use pool\n"
      "op drop pool!\nrelease pool\n",
      "t.model");
  EXPECT_TRUE(m.op("make")->fails.has(FailWord::Oom));
  EXPECT_TRUE(m.op("make")->fails.has(FailWord::HostOom));
  EXPECT_FALSE(m.op("make")->fails.has(FailWord::Lost));
  EXPECT_EQ(m.op("make")->fails.text(), "oom|host-oom") << "in the vocabulary's order";
  EXPECT_EQ(m.op("make")->weight, 2U);
  EXPECT_TRUE(m.op("use")->fails.empty());
}

// The rejections above each break one rule of this model: it must itself be valid.
TEST(LifecycleModel, TheRejectionsBaseModelIsValid) {
  const LifecycleModel m = parseModel(base(), "t.model");
  EXPECT_EQ(m.name, "t");
  EXPECT_EQ(m.resources.size(), 2u);
  EXPECT_EQ(m.ops.size(), 4u);
  EXPECT_TRUE(m.warnings.empty());
  // And so are the valid neighbours of several rejections.
  for (std::string_view line :
       {"op wait pool pool* +pending(pool)", "op grow pool n=1 (0..2) weight:2 +a(pool) -b(pool)",
        "op grow pool n=1(0..2)", "op grow pool n=18446744073709551615 (0..18446744073709551615)",
        "op go pool mode=b {a|b}", "op spawn pool! pool -> buf", "op both -> pool buf",
        "op wait pool*", "op grow pool weight:1000000", "op grow pool -pending(pool)"}) {
    EXPECT_NO_THROW(parseModel(withOp(line), "t.model")) << line;
  }
}

TEST(LifecycleModel, AReservedNameIsAllowedForTheProjectsOwnFiles) {
  for (const std::string& name : builtinModelNames()) {
    const std::string text = "model " + name + "\n" + base().substr(8);
    EXPECT_THROW(parseModel(text, "x.model"), InputError) << name;
    EXPECT_EQ(parseModel(text, "x.model", true).name, name);
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(BuiltinModels, TheSixParseAndAreTheFilesOfModelModels) {
  EXPECT_EQ(builtinModelNames(), (std::vector<std::string>{"renderer", "device", "all",
                                                           "cuda-driver", "opencl", "vulkan"}));
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const LifecycleModel& m = builtinModel(name);
    EXPECT_EQ(m.name, name);
    EXPECT_TRUE(m.builtin);
    EXPECT_EQ(m.source, name);
    // The runtime models may leave a kind without a default release: their executors release
    // every kind themselves (ModelExecutor::release). The generic three must not.
    if (name == "renderer" || name == "device" || name == "all") {
      EXPECT_TRUE(m.warnings.empty()) << "every built-in kind has a default release";
    }
    EXPECT_TRUE(isBuiltinModelName(name));
    EXPECT_EQ(&builtinModel(name), &m) << "built-ins are interned once";
    EXPECT_EQ(&resolveModel(name), &m);
    const std::string file =
        (testing::sourceDir() / "model/models").string() + "/" + name + ".model";
    const std::string text = readFile(file);
    ASSERT_FALSE(text.empty()) << file;
    EXPECT_EQ(m.text, text);
    EXPECT_EQ(parseModel(text, file, true).hash, m.hash);
    for (const OpDecl& op : m.ops)
      EXPECT_EQ(op.model, &m) << op.name;
  }
  EXPECT_FALSE(isBuiltinModelName("streams"));
  EXPECT_FALSE(isBuiltinModelName(""));
}

TEST(BuiltinModels, AnUnknownNameIsAnInputErrorNamingTheBuiltIns) {
  try {
    builtinModel("metal");
    FAIL() << "found a model named metal";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'metal'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("renderer, device, all"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolveModel("metal"), InputError);
}

TEST(BuiltinModels, HashesDifferAndFollowTheText) {
  std::set<std::string> hashes;
  for (const std::string& name : builtinModelNames()) {
    const std::string& h = builtinModel(name).hash;
    EXPECT_EQ(h.size(), 16u);
    EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
    hashes.insert(h);
  }
  EXPECT_EQ(hashes.size(), builtinModelNames().size());
  const LifecycleModel a = parseModel(base(), "a.model");
  EXPECT_EQ(parseModel(base(), "elsewhere.model").hash, a.hash) << "the hash is of the text alone";
  EXPECT_NE(parseModel(base() + "# a comment\n", "a.model").hash, a.hash)
      << "any change of the text changes the hash";
}

/// Whether two operations of two models are declared alike: slots (by kind name), arguments and
/// effects. (Weights are each model's own mix.)
void expectSameDeclaration(const LifecycleModel& a, const OpDecl& x, const LifecycleModel& b,
                           const OpDecl& y) {
  SCOPED_TRACE(x.name);
  EXPECT_EQ(x.name, y.name);
  ASSERT_EQ(x.slots.size(), y.slots.size());
  for (size_t i = 0; i < x.slots.size(); ++i) {
    EXPECT_EQ(x.slots[i].use, y.slots[i].use);
    EXPECT_EQ(a.resources[x.slots[i].kind].kind, b.resources[y.slots[i].kind].kind);
  }
  ASSERT_EQ(x.args.size(), y.args.size());
  for (size_t i = 0; i < x.args.size(); ++i) {
    EXPECT_EQ(x.args[i].key, y.args[i].key);
    EXPECT_EQ(x.args[i].min, y.args[i].min);
    EXPECT_EQ(x.args[i].max, y.args[i].max);
    EXPECT_EQ(x.args[i].defaultValue, y.args[i].defaultValue);
    EXPECT_EQ(x.args[i].words, y.args[i].words);
  }
  ASSERT_EQ(x.effects.size(), y.effects.size());
  for (size_t i = 0; i < x.effects.size(); ++i) {
    EXPECT_EQ(x.effects[i].set, y.effects[i].set);
    EXPECT_EQ(a.resources[x.effects[i].kind].flags[x.effects[i].flag],
              b.resources[y.effects[i].kind].flags[y.effects[i].flag]);
    EXPECT_EQ(x.effects[i].slot, y.effects[i].slot);
  }
  EXPECT_EQ(a.usage(x), b.usage(y));
}

TEST(BuiltinModels, AllIsTheUnionOfRendererAndDevice) {
  const LifecycleModel& all = builtinModel("all");
  const LifecycleModel& renderer = builtinModel("renderer");
  const LifecycleModel& device = builtinModel("device");
  ASSERT_EQ(all.ops.size(), renderer.ops.size() + device.ops.size());
  for (size_t i = 0; i < renderer.ops.size(); ++i)
    expectSameDeclaration(all, all.ops[i], renderer, renderer.ops[i]);
  for (size_t i = 0; i < device.ops.size(); ++i)
    expectSameDeclaration(all, all.ops[renderer.ops.size() + i], device, device.ops[i]);
  // Its kinds are theirs, declared alike, and its release order keeps each one's.
  ASSERT_EQ(all.resources.size(), renderer.resources.size() + device.resources.size());
  for (const LifecycleModel* part : {&renderer, &device}) {
    for (const ResourceDecl& r : part->resources) {
      const std::optional<size_t> k = all.kind(r.kind);
      ASSERT_TRUE(k.has_value()) << r.kind;
      EXPECT_EQ(all.resources[*k].prefix, r.prefix);
      EXPECT_EQ(all.resources[*k].flags, r.flags);
      EXPECT_EQ(all.resources[*k].owner.has_value(), r.owner.has_value());
      if (r.owner) {
        EXPECT_EQ(all.resources[*all.resources[*k].owner].kind, part->resources[*r.owner].kind);
      }
    }
    std::vector<std::string> own, inAll;
    for (size_t k : part->release)
      own.push_back(part->resources[k].kind);
    for (size_t k : all.release) {
      if (part->kind(all.resources[k].kind)) inAll.push_back(all.resources[k].kind);
    }
    EXPECT_EQ(inAll, own);
  }
  std::vector<std::string> release;
  for (size_t k : all.release)
    release.push_back(all.resources[k].kind);
  EXPECT_EQ(release, (std::vector<std::string>{"renderer", "buffer", "context"}));
  EXPECT_EQ(all.resources[*all.kind("buffer")].owner, all.kind("context"));
  EXPECT_EQ(all.resources[*all.kind("renderer")].flags,
            (std::vector<std::string>{"pending", "textured"}));
}

TEST(LifecycleModel, DefaultReleaseIsTheOnlyEndingOperationWithNoOtherSlot) {
  const LifecycleModel& all = builtinModel("all");
  EXPECT_EQ(all.defaultRelease(*all.kind("renderer")), all.op("destroy"));
  EXPECT_EQ(all.defaultRelease(*all.kind("buffer")), all.op("buf_destroy"));
  EXPECT_EQ(all.defaultRelease(*all.kind("context")), all.op("ctx_destroy"));

  const LifecycleModel m = parseModel(
      "model t\n"
      "resource pool\n"
      "resource stream\n"
      "resource job\n"
      "resource event\n"
      "op pool_create -> pool\n"
      "op pool_destroy pool! n=1 (0..3)\n"  // arguments are no slots: still the default release
      "op stream_create -> stream\n"
      "op stream_destroy stream!\n"
      "op stream_abort stream!\n"  // two ending operations: none is the default
      "op job_start stream -> job\n"
      "op job_end job! stream\n"    // another slot: no default
      "op event_create -> event\n"  // nothing ends an event
      "release job event stream pool\n",
      "t.model");
  EXPECT_EQ(m.defaultRelease(*m.kind("pool")), m.op("pool_destroy"));
  EXPECT_EQ(m.defaultRelease(*m.kind("stream")), nullptr);
  EXPECT_EQ(m.defaultRelease(*m.kind("job")), nullptr);
  EXPECT_EQ(m.defaultRelease(*m.kind("event")), nullptr);
  // Each kind without a default release is warned of, at its resource line, never thrown.
  ASSERT_EQ(m.warnings.size(), 3u);
  EXPECT_EQ(
      m.warnings[0].rfind("t.model:3:1: warning: a leftover stream has no default release", 0), 0u)
      << m.warnings[0];
  EXPECT_EQ(m.warnings[1].rfind("t.model:4:1: warning: a leftover job", 0), 0u) << m.warnings[1];
  EXPECT_EQ(m.warnings[2].rfind("t.model:5:1: warning: a leftover event", 0), 0u) << m.warnings[2];
}

// The contract's example (docs/models.md), as written there.
constexpr std::string_view kStreams = R"(# gpufuzz model
model streams                  # the model's name: [a-z][a-z0-9_-]*
note CUDA streams, events and stream-ordered pools

resource pool    prefix p      # generated names: p0, p1, ...
resource stream  prefix s
resource buf     prefix b  owner pool
resource event   prefix e

op pool_create   -> pool
op pool_destroy  pool!
op stream_create -> stream
op stream_destroy stream!
op alloc         pool stream -> buf   bytes=256 (1..2147483648)  weight:3
op free          buf! stream
op event_create  -> event
op event_destroy event!
op record        event stream                      +recorded(event)
op wait          stream event
op sync          stream                            -pending(stream)
op launch        stream buf       grid=1 (1..65535) +pending(stream)

release buf event stream pool  # what is alive at the end, kind by kind, each in creation order
)";

TEST(LifecycleModel, TheContractsStreamsExampleParses) {
  const LifecycleModel m = parseModel(kStreams, "streams.model");
  EXPECT_EQ(m.name, "streams");
  EXPECT_EQ(m.note, "CUDA streams, events and stream-ordered pools");
  EXPECT_FALSE(m.builtin);
  EXPECT_EQ(m.source, "streams.model");
  EXPECT_EQ(m.text, kStreams);
  ASSERT_EQ(m.resources.size(), 4u);
  std::vector<std::string> kinds, prefixes;
  for (const ResourceDecl& r : m.resources) {
    kinds.push_back(r.kind);
    prefixes.push_back(r.prefix);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"pool", "stream", "buf", "event"}));
  EXPECT_EQ(prefixes, (std::vector<std::string>{"p", "s", "b", "e"}));
  EXPECT_EQ(m.resources[2].owner, m.kind("pool"));
  EXPECT_FALSE(m.resources[0].owner.has_value());
  EXPECT_EQ(m.resources[1].flags, std::vector<std::string>{"pending"});
  EXPECT_EQ(m.resources[3].flags, std::vector<std::string>{"recorded"});
  EXPECT_EQ(m.resources[2].line, 7);

  ASSERT_EQ(m.ops.size(), 12u);
  const OpDecl& alloc = *m.op("alloc");
  EXPECT_EQ(alloc.weight, 3u);
  EXPECT_EQ(alloc.line, 14);
  ASSERT_EQ(alloc.slots.size(), 3u);
  EXPECT_EQ(alloc.slots[0].use, SlotUse::Use);
  EXPECT_EQ(alloc.slots[2].use, SlotUse::Introduce);
  EXPECT_EQ(alloc.slots[2].kind, *m.kind("buf"));
  ASSERT_EQ(alloc.args.size(), 1u);
  EXPECT_EQ(alloc.args[0].key, "bytes");
  EXPECT_EQ(alloc.args[0].defaultValue, 256u);
  EXPECT_EQ(alloc.args[0].min, 1u);
  EXPECT_EQ(alloc.args[0].max, 2147483648u);
  EXPECT_EQ(m.usage(alloc), "alloc P S B [bytes=1..2147483648]");
  EXPECT_EQ(m.usage(*m.op("free")), "free B S");
  EXPECT_EQ(m.op("free")->slots[0].use, SlotUse::End);
  EXPECT_EQ(m.op("sync")->weight, 1u) << "the default weight";

  const OpDecl& launch = *m.op("launch");
  ASSERT_EQ(launch.effects.size(), 1u);
  EXPECT_TRUE(launch.effects[0].set);
  EXPECT_EQ(launch.effects[0].kind, *m.kind("stream"));
  EXPECT_EQ(launch.effects[0].slot, 0u);
  EXPECT_FALSE(m.op("sync")->effects[0].set);
  EXPECT_EQ(m.op("record")->effects[0].slot, 0u);
  EXPECT_EQ(m.op("record")->effects[0].kind, *m.kind("event"));

  std::vector<std::string> release;
  for (size_t k : m.release)
    release.push_back(m.resources[k].kind);
  EXPECT_EQ(release, (std::vector<std::string>{"buf", "event", "stream", "pool"}));
  // free takes a stream too, so a buf has no default release: a warning, at buf's line.
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0].rfind("streams.model:7:1: warning: a leftover buf", 0), 0u)
      << m.warnings[0];
  EXPECT_EQ(m.defaultRelease(*m.kind("pool")), m.op("pool_destroy"));

  const std::string described = m.describe();
  EXPECT_NE(described.find("model streams (4 kinds, 12 operations, hash " + m.hash + ")"),
            std::string::npos)
      << described;
  EXPECT_NE(described.find("resource buf: names b0, b1, ...; owned by a pool"), std::string::npos)
      << described;
  EXPECT_NE(described.find("resource stream: names s0, s1, ...; flags pending"), std::string::npos)
      << described;
  EXPECT_NE(described.find("op alloc P S B [bytes=1..2147483648]  (weight 3)"), std::string::npos)
      << described;
  EXPECT_NE(described.find("release buf event stream pool"), std::string::npos) << described;
  // `model check` lists the failures each operation declares.
  const std::string opencl = builtinModel("opencl").describe();
  EXPECT_NE(
      opencl.find("op create_buffer C B [bytes=4..68719476736]  (weight 5; fails oom|host-oom)"),
      std::string::npos)
      << opencl;
}

TEST(LifecycleModel, AFlagIsOfTheFirstSingleNameSlotOfItsKind) {
  const LifecycleModel m = parseModel(
      "model t\nresource s\nop make -> s\nop two s* -> s +hot(s)\nop pair s s -cold(s)\n"
      "release s\n",
      "t.model");
  // The list slot is passed over: the flag is the introduced name's.
  EXPECT_EQ(m.op("two")->effects[0].slot, 1u);
  EXPECT_EQ(m.op("pair")->effects[0].slot, 0u);
  EXPECT_EQ(m.resources[0].flags, (std::vector<std::string>{"hot", "cold"}));
}

TEST(LifecycleModel, ListSlotsCountNamesAndMapThemToSlots) {
  const LifecycleModel m = parseModel(
      "model t\nresource stream\nresource event\nresource job prefix j\n"
      "op stream_create -> stream\nop event_create -> event\nop job_end job!\n"
      "op launch stream event* -> job\nop plain stream -> job\nrelease job event stream\n",
      "t.model");
  const OpDecl& launch = *m.op("launch");
  ASSERT_EQ(launch.listSlot(), std::optional<size_t>{1});
  EXPECT_EQ(m.usage(launch), "launch S [E...] J");
  EXPECT_EQ(launch.nameCount(0), 2u);
  EXPECT_EQ(launch.nameCount(3), 5u);
  // launch s0 e0 e1 e2 j0: the stream, three events, the job.
  EXPECT_EQ(launch.slotOfName(0, 5), 0u);
  for (size_t i = 1; i <= 3; ++i)
    EXPECT_EQ(launch.slotOfName(i, 5), 1u) << i;
  EXPECT_EQ(launch.slotOfName(4, 5), 2u);
  // launch s0 j0: the list is empty.
  EXPECT_EQ(launch.slotOfName(0, 2), 0u);
  EXPECT_EQ(launch.slotOfName(1, 2), 2u);
  EXPECT_EQ(nameIndexOfSlot(launch, 0, 5), 0u);
  EXPECT_EQ(nameIndexOfSlot(launch, 2, 5), 4u);
  EXPECT_EQ(nameIndexOfSlot(launch, 2, 2), 1u);

  const OpDecl& plain = *m.op("plain");
  EXPECT_FALSE(plain.listSlot().has_value());
  EXPECT_EQ(plain.nameCount(0), 2u);
  EXPECT_EQ(plain.slotOfName(1, 2), 1u);
  EXPECT_EQ(nameIndexOfSlot(plain, 1, 2), 1u);
}

TEST(LifecycleModel, WordArgumentsHoldTheWordsIndex) {
  const LifecycleModel& m = internModel(
      parseModel("model t\nresource stream\nop open -> stream\nop close stream!\n"
                 "op launch stream mode=fast {fast|slow|off} grid=1 (1..64)\nrelease stream\n",
                 "words.model"));
  const ArgDecl& mode = *m.op("launch")->arg("mode");
  EXPECT_TRUE(mode.isWord());
  EXPECT_EQ(mode.words, (std::vector<std::string>{"fast", "slow", "off"}));
  EXPECT_EQ(mode.defaultValue, 0u);
  EXPECT_EQ(mode.min, 0u);
  EXPECT_EQ(mode.max, 2u);
  EXPECT_EQ(mode.valueText(1), "slow");
  EXPECT_EQ(mode.rangeText(), "fast|slow|off");
  EXPECT_FALSE(m.op("launch")->arg("grid")->isWord());
  EXPECT_EQ(m.op("launch")->arg("grid")->valueText(7), "7");
  EXPECT_EQ(m.usage(*m.op("launch")), "launch S [mode=fast|slow|off] [grid=1..64]");
  EXPECT_EQ(m.op("launch")->argIndex("grid"), std::optional<size_t>{1});
  EXPECT_EQ(m.op("launch")->arg("speed"), nullptr);

  const Operation slow = makeOperation(m, "launch", {"s0"}, {{"mode", 1}});
  EXPECT_EQ(operationText(slow), "launch s0 mode=slow");
  EXPECT_EQ(operationText(makeOperation(m, "launch", {"s0"})), "launch s0");
  EXPECT_THROW(makeOperation(m, "launch", {"s0"}, {{"mode", 3}}), std::invalid_argument);

  // In a sequence: written as the word, read back as its index; another word is refused.
  const Sequence seq = parseSequence("open s0\nlaunch s0 grid=2 mode=off\n", "t.seq", &m);
  ASSERT_EQ(seq.ops.size(), 2u);
  EXPECT_EQ(seq.ops[1].arg("mode"), 2u);
  EXPECT_EQ(operationText(seq.ops[1]), "launch s0 mode=off grid=2");
  try {
    parseSequence("open s0\nlaunch s0 mode=warp\n", "t.seq", &m);
    FAIL() << "parsed mode=warp";
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 16);
    EXPECT_NE(e.message().find("mode=warp is not one of its words: mode takes fast|slow|off"),
              std::string::npos)
        << e.what();
  }
}

TEST(LifecycleModel, InterningKeepsOneModelPerTextAndSource) {
  const LifecycleModel& a = internModel(parseModel(base(), "same.model"));
  const LifecycleModel& b = internModel(parseModel(base(), "same.model"));
  EXPECT_EQ(&a, &b);
  const LifecycleModel& c = internModel(parseModel(base(), "other.model"));
  EXPECT_NE(&a, &c);
  EXPECT_EQ(c.source, "other.model");
  for (const OpDecl& op : c.ops)
    EXPECT_EQ(op.model, &c);
}

TEST(LifecycleModel, AModelPathContainsASlashOrEndsInDotModel) {
  EXPECT_TRUE(isModelPath("./x.model"));
  EXPECT_TRUE(isModelPath("x.model"));
  EXPECT_TRUE(isModelPath("dir/x"));
  EXPECT_TRUE(isModelPath("/abs/x.model"));
  EXPECT_FALSE(isModelPath("renderer"));
  EXPECT_FALSE(isModelPath("streams"));
  EXPECT_TRUE(isIdentifier("a_b9"));
  EXPECT_FALSE(isIdentifier("a-b"));
  EXPECT_FALSE(isIdentifier("9a"));
  EXPECT_FALSE(isIdentifier(""));
}

}  // namespace
}  // namespace gpufuzz
