// ClientModelTest.cpp: the C++ client library (clients/cpp/gpufuzz/target.hpp) in a lifecycle
// model's words (docs/models.md): the reader of a model's normalized facts (what it takes, what it
// skips, what it refuses and where), sequences read in a model (names by slot, KIND* lists, new
// names, arguments and their defaults, `@T`), which model a sequence is read in
// (GPUFUZZ_MODEL_FACTS, the facts beside GPUFUZZ_MODEL's file or `# model:`'s, the built-in), and
// runs in
// process, their events read back from a pipe: dispatch by name to registered handlers, run()
// overridden as before, `unsupported` (and its older form without a model), the release of
// leftovers in the model's order (release handlers, the default through the ending operation,
// owners, kinds left alone), threads (overlap, the order of names, the lowest failure).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpufuzz/target.hpp"
#include "model/LifecycleModel.h"
#include "model/NormalizedModel.h"

namespace {

namespace gt = gpufuzz::target;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr std::string_view kProbeModel = R"(# gpufuzz model
model probe
note The client library's tests: pools own buffers, streams, events, and kinds of every release.

resource pool    prefix p
resource stream  prefix s
resource buf     prefix b  owner pool
resource event   prefix e
resource thing   prefix t      # nothing ends it: a release handler, or left alone
resource mark    prefix m      # two operations end it: no default release

op pool_create    -> pool  flags=0 (0..7)                                 weight:2
op pool_destroy   pool!
op stream_create  -> stream  priority=normal {low|normal|high}
op stream_destroy stream!  drain=yes {yes|no}
op alloc          pool stream -> buf   bytes=256 (1..18446744073709551615)  weight:3
op free           buf! stream                                             # another slot: no default
op event_create   -> event
op event_destroy  event!
op record         event stream                                            +recorded(event)
op wait           stream event*  timeout=10 (0..100)
op launch         stream buf  grid=1 (1..65535)                           +pending(stream)
op thing_make     -> thing
op mark_make      -> mark
op mark_drop      mark!
op mark_clear     mark!
op block          stream
op unblock        event

release buf event stream pool thing mark
)";

std::string bad(const std::function<void()>& f) {
  try {
    f();
  } catch (const gt::BadSequence& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::ptrdiff_t indexOf(const std::vector<std::string>& v, const std::string& s) {
  const auto it = std::find(v.begin(), v.end(), s);
  return it == v.end() ? -1 : it - v.begin();
}

class Fixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpufuzz-client-model-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ::unsetenv(gt::kModelVariable);
    ::unsetenv(gt::kModelFactsVariable);
    modelPath_ = writeModel("probe.model", kProbeModel);
    model_ = gt::loadModel(modelPath_);
  }
  void TearDown() override {
    ::unsetenv(gt::kModelVariable);
    ::unsetenv(gt::kModelFactsVariable);
    fs::remove_all(dir_);
  }

  /// Writes a model file and its facts beside it, as gpufuzz writes them.
  std::string writeModel(const std::string& name, std::string_view text) {
    const std::string path = write(name, text);
    write(gpufuzz::modelFactsPath(name), gpufuzz::normalizedModel(gpufuzz::parseModel(text, path)));
    return path;
  }

  std::string write(const std::string& name, std::string_view text) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  gt::Sequence parse(const std::string& body) {
    return gt::parseSequence("# gpufuzz sequence\n" + body, model_, "t.seq");
  }

  /// Runs a sequence on `target`: its exit status, and the events.
  std::pair<int, std::vector<std::string>> run(const gt::Sequence& seq, gt::Target& target) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    const int status = gt::runSequence(seq, target, gt::Events(fds[1]));
    ::close(fds[1]);
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
      text.append(buffer, static_cast<std::size_t>(n));
    ::close(fds[0]);
    return {status, lines(text)};
  }

  fs::path dir_;
  std::string modelPath_;
  std::shared_ptr<const gt::Model> model_;
};

/// Logs every call: "OP NAMES... key=value... at=AT thread=T"; registers a handler for every
/// operation of the model but those in `lacks`.
class Probe : public gt::Target {
 public:
  explicit Probe(const gt::Model& model, std::vector<std::string> lacks = {}) {
    for (const gt::OperationSpec& spec : model.ops) {
      if (std::find(lacks.begin(), lacks.end(), spec.name) != lacks.end()) continue;
      handle(spec.name, [this](const gt::Operation& op) { call(op); });
    }
  }
  void call(const gt::Operation& op) {
    std::string text = op.op;
    for (const std::string& n : op.names)
      text += " " + n;
    for (const auto& [k, v] : op.args)
      text += " " + k + "=" + std::to_string(v);
    for (const auto& [k, v] : op.words)
      text += " " + k + "=" + v;
    text += " at=" + std::to_string(op.at) + " thread=" + std::to_string(op.thread);
    log(text);
    if (op.op == "block") {
      std::unique_lock<std::mutex> lock(blockMutex_);
      if (!unblocked_.wait_for(lock, 10s, [this] { return unblock_; })) {
        throw gt::Failure("error", "block: unblock never ran (the threads did not overlap)");
      }
    }
    if (op.op == "unblock") {
      const std::lock_guard<std::mutex> lock(blockMutex_);
      unblock_ = true;
      unblocked_.notify_all();
    }
    if (const auto it = slow.find(op.op); it != slow.end()) std::this_thread::sleep_for(it->second);
    if (failing.count(op.op)) throw gt::Failure("error", op.op + " failed as asked");
  }
  void log(const std::string& text) {
    const std::lock_guard<std::mutex> lock(mutex_);
    calls.push_back(text);
  }
  std::optional<std::string> leaks() override {
    log("leaks");
    return std::nullopt;
  }

  std::vector<std::string> calls;
  std::map<std::string, std::chrono::milliseconds> slow;
  std::set<std::string> failing;

 private:
  std::mutex mutex_;
  std::mutex blockMutex_;
  std::condition_variable unblocked_;
  bool unblock_ = false;
};

TEST(ModelReader, TheBuiltinModelIsTheVocabularyOfOld) {
  const auto m = gt::builtinModel();
  EXPECT_EQ(m->name, "all");
  std::vector<std::string> names;
  for (const auto& o : m->ops)
    names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"create", "draw", "sync", "set_textures", "read_back",
                                             "destroy", "ctx_create", "buf_create", "buf_destroy",
                                             "ctx_destroy"}));
  EXPECT_EQ(m->release, (std::vector<std::string>{"renderer", "buffer", "context"}));
  EXPECT_EQ(m->resource("buffer")->owner, "context");
  EXPECT_EQ(m->op("draw")->weight, 30u);
  ASSERT_EQ(m->op("draw")->flags.size(), 1u);
  EXPECT_TRUE(m->op("draw")->flags[0].set);
  EXPECT_EQ(m->op("sync")->flags[0].name, "pending");
  EXPECT_EQ(m->op("buf_create")->arg("bytes")->max, 2147483648u);
  EXPECT_EQ(m->op("create")->arg("width")->defaultValue, 64u);
  EXPECT_EQ(m->releaseOperation("renderer")->name, "destroy");
  EXPECT_EQ(m->releaseOperation("buffer")->name, "buf_destroy");
  EXPECT_EQ(m->releaseOperation("context")->name, "ctx_destroy");
  EXPECT_EQ(gt::builtinModel().get(), m.get());  // parsed once
}

TEST_F(Fixture, TheFactsOfAModelOfEveryKindOfLine) {
  const gt::Model& m = *model_;
  EXPECT_EQ(m.name, "probe");
  EXPECT_EQ(m.path, (dir_ / "probe.facts").string());
  EXPECT_EQ(m.hash, gpufuzz::parseModel(kProbeModel, "probe.model").hash);
  EXPECT_EQ(m.note.substr(0, 26), "The client library's tests");
  ASSERT_EQ(m.resources.size(), 6u);
  EXPECT_EQ(m.resource("buf")->owner, "pool");
  EXPECT_EQ(m.resource("mark")->prefix, "m");
  const gt::OperationSpec& alloc = *m.op("alloc");
  ASSERT_EQ(alloc.slots.size(), 2u);
  EXPECT_EQ(alloc.slots[1].kind, "stream");
  EXPECT_EQ(alloc.introduces, std::vector<std::string>{"buf"});
  EXPECT_EQ(alloc.arg("bytes")->max, UINT64_MAX);
  EXPECT_EQ(alloc.weight, 3u);
  EXPECT_TRUE(m.op("wait")->hasList());
  EXPECT_EQ(m.op("wait")->fewestNames(), 1u);
  const gt::Argument& priority = *m.op("stream_create")->arg("priority");
  EXPECT_TRUE(priority.isWord());
  EXPECT_EQ(priority.defaultWord, "normal");
  EXPECT_EQ(priority.defaultValue, 1u);
  EXPECT_EQ(priority.words, (std::vector<std::string>{"low", "normal", "high"}));
  EXPECT_EQ(m.op("free")->slots[0].mode, gt::Slot::Mode::End);
  ASSERT_EQ(m.op("launch")->flags.size(), 1u);
  EXPECT_EQ(m.op("launch")->flags[0].name, "pending");
  EXPECT_EQ(m.release,
            (std::vector<std::string>{"buf", "event", "stream", "pool", "thing", "mark"}));
  EXPECT_EQ(m.releaseOperation("stream")->name, "stream_destroy");
  EXPECT_EQ(m.releaseOperation("buf"), nullptr);             // free also takes a stream
  EXPECT_EQ(m.releaseOperation("thing"), nullptr);           // nothing ends it
  EXPECT_EQ(m.releaseOperation("mark"), nullptr);            // two operations end it
  EXPECT_EQ(gt::loadModel(modelPath_).get(), model_.get());  // the same text is read once
}

constexpr std::string_view kHeader = "gpufuzz-model-facts 1\n";

TEST(FactsReader, ALaterVersionsFactIsSkippedAndANoteIsFreeText) {
  const gt::Model m = gt::parseModelFacts(
      std::string(kHeader) +
          "model m 0123456789abcdef\r\n\nnote  Streams (CUDA) {and} -> more: a|b \n"
          "resource thing x\nresource box b\nowner thing box\ncolour thing red\n"
          "op make\nslot make thing new\nop use\nslot use thing use\narg use n int 1 0 9\n"
          "arg use w word a a b\nweight use 4\neffect use set f thing\nfails use lost oom\n"
          "release thing\nrelease box\n",
      "m.facts");
  EXPECT_EQ(m.name, "m");
  EXPECT_EQ(m.hash, "0123456789abcdef");
  EXPECT_EQ(m.note, "Streams (CUDA) {and} -> more: a|b");
  EXPECT_EQ(m.op("use")->arg("n")->max, 9u);
  EXPECT_EQ(m.op("use")->arg("w")->words, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.op("use")->weight, 4u);
  EXPECT_EQ(m.op("use")->fails, (std::vector<std::string>{"lost", "oom"}));
  EXPECT_EQ(m.op("make")->introduces, std::vector<std::string>{"thing"});
  EXPECT_EQ(m.resource("thing")->prefix, "x");
  EXPECT_EQ(m.resource("thing")->owner, "box");
  EXPECT_EQ(m.release, (std::vector<std::string>{"thing", "box"}));
  EXPECT_EQ(m.releaseOperation("thing"), nullptr);
}

TEST(FactsReader, WhatItCannotReadIsRefusedWithItsPlace) {
  const std::string head = std::string(kHeader) + "model m 0123456789abcdef\nresource r r\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "m.facts:1:1: not a model's facts"},
      {"# gpufuzz model\nmodel m\n", "m.facts:1:1: not a model's facts"},
      {"gpufuzz-model-facts 2\nmodel m 0\n", "m.facts:1:1: 'gpufuzz-model-facts 2' is a version"},
      {std::string(kHeader) + "resource r r\n", "m.facts:3:1: the facts have no 'model NAME HASH'"},
      {head + "model n 0\n", "m.facts:4:1: a second model fact"},
      {head + "resource r s\n", "m.facts:4:10: kind 'r' is declared twice"},
      {head + "resource q\n", "m.facts:4:1: 'resource' is resource KIND PREFIX"},
      {head + "owner r q\n", "m.facts:4:9: 'q' is not a kind of an earlier resource fact"},
      {head + "op a\nop a\n", "m.facts:5:4: operation 'a' is declared twice"},
      {head + "slot a r use\n", "m.facts:4:6: 'a' is not an operation of an earlier op fact"},
      {head + "op a\nslot a r keep\n", "m.facts:5:10: 'keep' is not a slot's use"},
      {head + "op a\nslot a r new\nslot a r use\n", "m.facts:6:10: a used slot after a new"},
      {head + "op a\nslot a r list\nslot a r list\n", "m.facts:6:10: a second list slot"},
      {head + "op a\nweight a 0\n", "m.facts:5:10: a weight is at least 1"},
      {head + "op a\nweight a 01\n", "m.facts:5:10: '01' is not an unsigned decimal"},
      {head + "op a\narg a n int 1 0 18446744073709551616\n", "m.facts:5:17: '18446744"},
      {head + "op a\narg a n int 5 0 4\n", "m.facts:5:13: the default is not within"},
      {head + "op a\narg a n int 1 0\n", "m.facts:5:1: 'arg' is arg OP KEY int"},
      {head + "op a\narg a n word c a b\n", "m.facts:5:14: the default is not one of the"},
      {head + "op a\narg a n text 1 0 2\n", "m.facts:5:9: 'text' is not an argument's type"},
      {head + "op a\narg a n int 1 0 2\narg a n int 1 0 2\n", "m.facts:6:7: argument 'n' is"},
      {head + "op a\nfails a oops\n", "m.facts:5:9: unknown failure 'oops'"},
      {head + "op a\neffect a flip f r\n", "m.facts:5:10: 'flip' is not an effect"},
      {head + "release r\nrelease r\n", "m.facts:5:9: kind 'r' is released twice"},
      {head + "release r gone\n", "m.facts:4:11: 'gone' is not an operation"},
  };
  for (const auto& [text, want] : cases) {
    const std::string got = bad([&] { gt::parseModelFacts(text, "m.facts"); });
    EXPECT_NE(got.find(want), std::string::npos) << text << "\n got: " << got;
  }
  EXPECT_NE(bad([] {
              gt::loadModelFacts("/nonexistent/x.facts");
            }).find("/nonexistent/x.facts: cannot read the model facts"),
            std::string::npos);
}

TEST_F(Fixture, NamesBySlotListsAndNewNamesLast) {
  const gt::Sequence s = parse(
      "pool_create p0\nstream_create s0\nevent_create e0\nevent_create e1\n"
      "alloc p0 s0 b0 bytes=18446744073709551615\nwait s0\nwait s0 e1 e0 timeout=3\n");
  ASSERT_EQ(s.ops.size(), 7u);
  const gt::Operation& alloc = s.ops[4];
  EXPECT_EQ(alloc.names, (std::vector<std::string>{"p0", "s0", "b0"}));
  EXPECT_EQ(alloc.introduced(), "b0");
  EXPECT_EQ(alloc.arg("bytes"), UINT64_MAX);
  EXPECT_EQ(alloc.spec, s.vocabulary().op("alloc"));
  EXPECT_TRUE(s.ops[5].list().empty());
  EXPECT_EQ(s.ops[5].arg("timeout"), 10u);
  EXPECT_EQ(s.ops[6].list(), (std::vector<std::string>{"e1", "e0"}));
  EXPECT_EQ(s.ops[6].listSize(), 2u);
  EXPECT_EQ(s.ops[6].arg("timeout"), 3u);
  EXPECT_EQ(s.ops[6].at, 7u);
  EXPECT_TRUE(s.modelGiven);
}

TEST_F(Fixture, ArgumentsTakeTheModelsDefaultsAndWords) {
  const gt::Sequence s = parse(
      "pool_create p0\nstream_create s0 priority=high\nstream_create s1\nstream_destroy s1 "
      "drain=no\n");
  EXPECT_EQ(s.ops[0].arg("flags"), 0u);
  EXPECT_EQ(s.ops[0].arg("flags", 5), 0u);  // filled in: the model's default
  EXPECT_EQ(s.ops[1].word("priority"), "high");
  EXPECT_EQ(s.ops[2].word("priority"), "normal");
  EXPECT_EQ(s.ops[3].word("drain"), "no");
  EXPECT_THROW(s.ops[0].arg("nope"), std::out_of_range);
  EXPECT_THROW(s.ops[0].word("flags"), std::out_of_range);
}

TEST_F(Fixture, LivenessFollowsTheModel) {
  const gt::Sequence s = parse(
      "pool_create p0\nstream_create s0\nalloc p0 s0 b0\npool_destroy p0\nlaunch s0 b0\n"
      "free b0 s0\nthing_make t0\nmark_make m0\n");
  std::vector<std::string> left;
  for (const gt::Leftover& l : s.leftovers())
    left.push_back(l.resource + " " + l.name);
  // Ending an owner leaves what it owns alive; ending a name by a slot KIND!.
  EXPECT_EQ(left, (std::vector<std::string>{"stream s0", "thing t0", "mark m0"}));
}

TEST_F(Fixture, Threads) {
  gt::Sequence s = parse("stream_create s0\n@2 event_create e0\n@1 record e0 s0\n");
  EXPECT_EQ(s.ops[1].thread, 2u);
  EXPECT_EQ(s.ops[2].thread, 1u);
  EXPECT_EQ(s.threads, 3u);
  EXPECT_EQ(parse("# threads: 4\nstream_create s0\n").threads, 4u);
}

TEST_F(Fixture, WhatTheModelDoesNotAllowIsRefusedWithItsPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"frob p0\n", "t.seq:2:1: unknown operation 'frob' (known: pool_create, pool_destroy"},
      {"alloc p0\n", "t.seq:2:1: 'alloc' takes 3 name(s), not 1"},
      {"pool_create p0 p1\n", "t.seq:2:1: 'pool_create' takes 1 name(s), not 2"},
      {"wait\n", "t.seq:2:1: 'wait' takes at least 1 name(s), not 0"},
      {"pool_create p0\nalloc p0 p0 b0\n", "t.seq:3:10: 'p0' is named twice"},
      {"pool_create p0\nstream_create s0\nalloc s0 p0 b0\n", "t.seq:4:7: 's0' is not a live pool"},
      {"pool_create p0\npool_destroy p0\npool_destroy p0\n", "t.seq:4:14: 'p0' is not a live"},
      {"pool_create p0\npool_destroy p0\npool_create p0\n", "t.seq:4:13: 'p0' is introduced"},
      {"pool_create p0 flags=8\n", "t.seq:2:16: flags=8: expected an integer in 0..7"},
      {"pool_create p0 flags=01\n", "t.seq:2:16: flags=01: expected an integer in 0..7"},
      {"stream_create s0 priority=max\n",
       "t.seq:2:18: priority=max: expected one of low, normal, high"},
      {"pool_create p0 flags=1 flags=2\n", "t.seq:2:24: argument 'flags' given twice"},
      {"pool_create p0 colour=3\n",
       "t.seq:2:16: unknown argument 'colour=3' for 'pool_create' (keys: flags)"},
      {"pool_create p0 flags=1 p1\n", "t.seq:2:24: a name after an argument: p1"},
      {"pool_create P0\n", "t.seq:2:13: 'P0' is not a name"},
      {"@8 pool_create p0\n", "t.seq:2:1: '@8' is not a thread (@0..@7)"},
      {"@x pool_create p0\n", "t.seq:2:1: '@x' is not a thread"},
      {"@1\n", "t.seq:2:1: a thread without an operation"},
      {"# threads: 9\npool_create p0\n", "t.seq:2:1: threads: 9: expected 1..8"},
  };
  for (const auto& [body, want] : cases) {
    const std::string got = bad([&] { parse(body); });
    EXPECT_NE(got.find(want), std::string::npos) << body << "\n got: " << got;
  }
}

TEST_F(Fixture, WhichModelASequenceIsReadIn) {
  const std::string copy =
      std::string(kProbeModel).replace(kProbeModel.find("model probe"), 11, "model copy");
  writeModel("finding/probe.model", copy);
  const std::string path = write("finding/minimal.seq", "# model: ./probe.model\npool_create p0\n");
  EXPECT_EQ(gt::loadSequence(path).vocabulary().name, "copy");  // relative to the file
  EXPECT_TRUE(gt::loadSequence(path).modelGiven);
  ::setenv(gt::kModelVariable, modelPath_.c_str(), 1);  // GPUFUZZ_MODEL overrides it
  EXPECT_EQ(gt::loadSequence(path).vocabulary().name, "probe");
  // GPUFUZZ_MODEL_FACTS overrides both: the harness sets it to the facts of GPUFUZZ_MODEL's file.
  ::setenv(gt::kModelFactsVariable, (dir_ / "finding/probe.facts").c_str(), 1);
  EXPECT_EQ(gt::loadSequence(path).vocabulary().name, "copy");
  EXPECT_TRUE(gt::loadSequence(path).modelGiven);
  ::unsetenv(gt::kModelFactsVariable);
  ::unsetenv(gt::kModelVariable);
  const std::string absolute = write(
      "other.seq", "# model: " + (dir_ / "finding/probe.model").string() + "\npool_create p0\n");
  EXPECT_EQ(gt::loadSequence(absolute).vocabulary().name, "copy");
  for (const std::string directive : {"# model: renderer\n", "# model: all\n", ""}) {
    const gt::Sequence s = gt::parseSequence(directive + "create r0\n", "t.seq");
    EXPECT_EQ(s.vocabulary().name, "all");
    EXPECT_EQ(s.modelGiven, !directive.empty());
  }
  EXPECT_NE(bad([] {
              gt::parseSequence("# policy: shipped\n# model: cuda\ncreate r0\n", "t.seq");
            }).find("t.seq:2:1: the built-in model 'cuda' is not one this library holds"),
            std::string::npos);
  EXPECT_NE(bad([&] {
              gt::parseSequence("# model: ./gone.model\ncreate r0\n", path);
            }).find("gone.model: cannot read the model file"),
            std::string::npos);
}

TEST_F(Fixture, AModelFileWithoutItsFactsOrWithStaleOnesIsRefused) {
  const std::string bare = write("bare.model", kProbeModel);
  const std::string none = bad([&] { gt::loadModel(bare); });
  EXPECT_NE(none.find(bare + ": no facts beside the model file (" + (dir_ / "bare.facts").string() +
                      "): write them with `gpufuzz model normalize " + bare),
            std::string::npos)
      << none;
  // The model file edited after its facts were written: the hashes differ.
  write("probe.model", std::string(kProbeModel) + "# edited\n");
  const std::string stale = bad([&] { gt::loadModel(modelPath_); });
  EXPECT_NE(stale.find((dir_ / "probe.facts").string() + ": the facts are of another text of " +
                       modelPath_),
            std::string::npos)
      << stale;
  ::setenv(gt::kModelVariable, modelPath_.c_str(), 1);
  EXPECT_NE(bad([] { gt::parseSequence("pool_create p0\n", "t.seq"); }).find("another text"),
            std::string::npos);
}

constexpr const char* kBody =
    "pool_create p0 flags=3\nstream_create s0\nalloc p0 s0 b0\nevent_create e0\nevent_create "
    "e1\nrecord e0 s0\nwait s0 e0 e1\nlaunch s0 b0 grid=7\n";

TEST_F(Fixture, EachOperationGoesToItsHandlerByName) {
  Probe probe(*model_);
  const auto [status, events] =
      run(parse(std::string(kBody) + "pool_destroy p0\nfree b0 s0\nstream_destroy s0\n"), probe);
  EXPECT_EQ(status, 0);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0], "start 11");
  EXPECT_EQ(events[1], "begin 1 pool_create");
  EXPECT_EQ(events.back(), "outcome pass - - ");
  EXPECT_EQ(probe.calls, (std::vector<std::string>{
                             "pool_create p0 flags=3 at=1 thread=0",
                             "stream_create s0 priority=normal at=2 thread=0",
                             "alloc p0 s0 b0 bytes=256 at=3 thread=0",
                             "event_create e0 at=4 thread=0",
                             "event_create e1 at=5 thread=0",
                             "record e0 s0 at=6 thread=0",
                             "wait s0 e0 e1 timeout=10 at=7 thread=0",
                             "launch s0 b0 grid=7 at=8 thread=0",
                             "pool_destroy p0 at=9 thread=0",
                             "free b0 s0 at=10 thread=0",
                             "stream_destroy s0 drain=yes at=11 thread=0",
                             "event_destroy e0 at=0 thread=0",  // the leftovers
                             "event_destroy e1 at=0 thread=0",
                             "leaks",
                         }));
}

TEST_F(Fixture, AnOperationNothingHandlesIsUnsupported) {
  Probe probe(*model_, {"stream_create", "pool_destroy"});
  auto [status, events] = run(parse("pool_create p0\nstream_create s0\n"), probe);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(events, (std::vector<std::string>{
                        "start 2", "begin 1 pool_create", "done 1", "begin 2 stream_create",
                        "outcome unsupported 2 stream_create unsupported operation"}));
  // At the release: the default release's operation has no handler.
  Probe again(*model_, {"pool_destroy"});
  std::tie(status, events) = run(parse("pool_create p0\n"), again);
  EXPECT_EQ(events.back(), "outcome unsupported end end unsupported operation");
}

/// A target of old: run() overridden, dispatching on op.op; no handler registered.
class OldStyle : public gt::Target {
 public:
  void run(const gt::Operation& op) override {
    if (op.op == "create" || op.op == "destroy" || op.op == "ctx_create") {
      calls.push_back(op.op + " " + op.name() + " width=" + std::to_string(op.arg("width", 7)));
      return;
    }
    throw gt::Unsupported();
  }
  std::vector<std::string> calls;
};

TEST_F(Fixture, WithoutAModelNamedATargetOfOldRunsAsItAlwaysDid) {
  OldStyle target;
  const gt::Sequence s =
      gt::parseSequence("create r0 width=9\nctx_create c0\ncreate r1\n", "t.seq");
  EXPECT_FALSE(s.modelGiven);
  auto [status, events] = run(s, target);
  EXPECT_EQ(status, 1);  // ctx_destroy c0 at the release: unsupported, in the older form
  EXPECT_EQ(target.calls, (std::vector<std::string>{"create r0 width=9", "ctx_create c0 width=7",
                                                    "create r1 width=64", "destroy r0 width=7",
                                                    "destroy r1 width=7"}));
  EXPECT_EQ(events.back(), "outcome error end end unsupported operation");
  OldStyle again;
  std::tie(status, events) = run(gt::parseSequence("create r0\nsync r0\n", "t.seq"), again);
  EXPECT_EQ(events.back(), "outcome error 2 sync unsupported operation");
  // The same with a model named: the class `unsupported`.
  OldStyle named;
  std::tie(status, events) =
      run(gt::parseSequence("create r0\nsync r0\n", gt::builtinModel()), named);
  EXPECT_EQ(events.back(), "outcome unsupported 2 sync unsupported operation");
  // A Leftover made by hand releases through the built-in operations, as it always did.
  OldStyle byHand;
  byHand.release(gt::Leftover{gt::Leftover::Kind::Renderer, "r7"});
  EXPECT_EQ(byHand.calls, std::vector<std::string>{"destroy r7 width=7"});
}

TEST_F(Fixture, LeftoversAreReleasedInTheModelsOrder) {
  Probe probe(*model_);
  probe.handleRelease("buf",
                      [&probe](const std::string& name) { probe.log("release buf " + name); });
  probe.handleRelease("thing",
                      [&probe](const std::string& name) { probe.log("release thing " + name); });
  const auto [status, events] = run(
      parse("pool_create p0\nstream_create s0\nalloc p0 s0 b0\nstream_create s1\nalloc p0 s1 b1\n"
            "event_create e0\npool_create p1\nthing_make t0\nmark_make m0\npool_destroy p0\n"
            "event_create e1\nstream_destroy s1 drain=no\n"),
      probe);
  EXPECT_EQ(status, 0);
  const std::vector<std::string> released(probe.calls.begin() + 12, probe.calls.end());
  EXPECT_EQ(released, (std::vector<std::string>{
                          "release buf b0", "release buf b1",  // the kind's handler; pool ended
                          "event_destroy e0 at=0 thread=0", "event_destroy e1 at=0 thread=0",
                          "stream_destroy s0 drain=yes at=0 thread=0",  // default arguments
                          "pool_destroy p1 at=0 thread=0", "release thing t0",
                          // mark: two operations end it, and no handler: left alone
                          "leaks"}));
  EXPECT_EQ(
      std::vector<std::string>(events.end() - 4, events.end()),
      (std::vector<std::string>{"done 12", "begin end end", "done end", "outcome pass - - "}));
}

TEST_F(Fixture, AFailedReleaseIsAtEnd) {
  Probe probe(*model_);
  probe.failing = {"stream_destroy"};
  const auto [status, events] = run(parse("stream_create s0\nstream_create s1\n"), probe);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(events.back(), "outcome error end end stream_destroy failed as asked");
  EXPECT_EQ(probe.calls.back(), "stream_destroy s0 drain=yes at=0 thread=0");
}

TEST_F(Fixture, OperationsOfDifferentThreadsOverlap) {
  Probe probe(*model_);
  const auto [status, events] = run(
      parse("# threads: 2\nstream_create s0\nevent_create e0\n@1 block s0\nunblock e0\n"), probe);
  EXPECT_EQ(status, 0) << events.back();
  // block waited for unblock to begin; their "done" lines may come in either order
  EXPECT_LT(indexOf(events, "begin 4 unblock"), indexOf(events, "done 3"));
  EXPECT_EQ(events.back(), "outcome pass - - ");
  EXPECT_NE(indexOf(probe.calls, "block s0 at=3 thread=1"), -1);
}

TEST_F(Fixture, AnOperationBeginsAfterItsNamesPreviousOperation) {
  Probe probe(*model_);
  probe.slow = {{"alloc", 300ms}};
  const auto [status, events] = run(parse("pool_create p0\nstream_create s0\n@1 stream_create s1\n"
                                          "alloc p0 s0 b0\n@1 launch s0 b0\n@1 wait s1\n"),
                                    probe);
  EXPECT_EQ(status, 0);
  EXPECT_LT(indexOf(events, "done 4"), indexOf(events, "begin 5 launch"));
  EXPECT_LT(indexOf(events, "done 5"), indexOf(events, "begin 6 wait"));  // its thread's
  EXPECT_LT(indexOf(events, "done 2"), indexOf(events, "begin 4 alloc"));
  EXPECT_LT(indexOf(events, "begin 3 stream_create"), indexOf(events, "done 4"));
  for (int at = 1; at <= 6; ++at) {
    EXPECT_EQ(std::count_if(events.begin(), events.end(),
                            [&](const std::string& e) {
                              return e.starts_with("begin " + std::to_string(at) + " ");
                            }),
              1);
  }
}

TEST_F(Fixture, AfterAFailureNothingNewBegins) {
  Probe probe(*model_);
  probe.failing = {"stream_create"};
  const auto [status, events] =
      run(parse("stream_create s0\nstream_create s1\n@1 wait s1\n"), probe);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(events, (std::vector<std::string>{
                        "start 3", "begin 1 stream_create",
                        "outcome error 1 stream_create stream_create failed as asked"}));
}

TEST_F(Fixture, TwoFailuresInFlightReportTheLowerOrdinal) {
  Probe probe(*model_);
  probe.slow = {{"wait", 500ms}};
  probe.failing = {"wait"};
  const auto [status, events] =
      run(parse("stream_create s0\nstream_create s1\nevent_create e0\n@1 wait s1\nwait s0\n"
                "stream_create s2\n"),
          probe);
  EXPECT_EQ(status, 1);
  EXPECT_NE(indexOf(events, "begin 4 wait"), -1);
  EXPECT_NE(indexOf(events, "begin 5 wait"), -1);
  EXPECT_EQ(events.back(), "outcome error 4 wait wait failed as asked");
  EXPECT_EQ(indexOf(events, "begin 6 stream_create"), -1);
}

TEST_F(Fixture, AStartThatFailsEndsTheThreads) {
  struct Refuses : Probe {
    using Probe::Probe;
    void start(const gt::Sequence&) override { throw gt::Failure("error", "no device"); }
  } probe(*model_);
  const auto [status, events] = run(parse("stream_create s0\n@1 stream_create s1\n"), probe);
  EXPECT_EQ(status, 1);
  EXPECT_EQ(events,
            (std::vector<std::string>{"start 2", "outcome error 1 stream_create no device"}));
  EXPECT_TRUE(probe.calls.empty());
}

/// A renderer whose create makes three calls that can run out, each asking mayFail() first.
class MarkedRenderer : public gt::Target {
 public:
  explicit MarkedRenderer(bool honours) : honours_(honours) {
    handle("create", [this](const gt::Operation& op) {
      for (const char* call : {"ctx_create", "buf_alloc", "buf_alloc"})
        gt::mayFail({"oom", "host-oom"}, call);
      alive.insert(op.names[0]);
    });
    handle("draw", [this](const gt::Operation& op) {
      gt::mayFail({"host-oom", "lost"}, "launch");
      if (alive.count(op.names[0]) == 0) throw std::runtime_error("draw of a renderer never made");
    });
    handle("destroy", [this](const gt::Operation& op) { alive.erase(op.names[0]); });
  }
  bool honoursMarks() const override { return honours_; }
  std::set<std::string> alive;

 private:
  bool honours_;
};

// docs/failures.md in the C++ client: the marked call fails through mayFail(), the operation ends
// with `fail`, what uses its names is skipped and never released, and a target that does not
// honour marks answers unsupported rather than pass.
TEST_F(Fixture, AMarkedCallFailsAndWhatUsesItsNamesIsSkipped) {
  MarkedRenderer target(true);
  const auto [status, events] = run(
      gt::parseSequence("create r0 !oom@2\ndraw r0\ncreate r1\ndraw r1 !lost\n", "t.seq"), target);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(events,
            (std::vector<std::string>{
                "start 4", "begin 1 create", "fail 1 buf_alloc: oom (injected)", "skip 2",
                "begin 3 create", "done 3", "begin 4 draw", "fail 4 launch: lost (injected)",
                "begin end end", "done end", "outcome pass - - "}));
  EXPECT_TRUE(target.alive.empty()) << "r1 released at the end, r0 never made";
  // A mark whose call never comes does nothing.
  MarkedRenderer again(true);
  const auto [status2, events2] =
      run(gt::parseSequence("create r0 !oom@4\ndraw r0\n", "t.seq"), again);
  EXPECT_EQ(status2, 0);
  EXPECT_EQ(indexOf(events2, "done 1"), 2);
  // Without honoursMarks(), a marked file is unsupported, never a pass whose mark did nothing.
  MarkedRenderer plain(false);
  const auto [status3, events3] =
      run(gt::parseSequence("create r0\ndraw r0 !host-oom\n", "t.seq"), plain);
  EXPECT_EQ(status3, 1);
  ASSERT_EQ(events3.size(), 2U);
  EXPECT_TRUE(events3[1].starts_with("outcome unsupported 2 draw")) << events3[1];
}

TEST_F(Fixture, EveryBadMarkIsRefusedWithItsPlace) {
  for (const auto& [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"create r0 !oops\n", "t.seq:1:11:"},
           {"create r0 !oom@0\n", "t.seq:1:11:"},
           {"create r0 !oom !oom\n", "t.seq:1:11:"},
           {"create !oom r0\n", "t.seq:1:8:"},
           {"!oom\n", "t.seq:1:1:"},
           {"create r0\ndraw r0 !oom\n", "t.seq:2:1:"}}) {
    EXPECT_NE(bad([&] { gt::parseSequence(text, "t.seq"); }).find(where), std::string::npos)
        << text << ": " << bad([&] { gt::parseSequence(text, "t.seq"); });
  }
}

}  // namespace
