// SequenceParseTest.cpp: reading `.seq` text: what it accepts, and every error with its place.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "base/InputError.h"
#include "model/Sequence.h"
#include "model/SequenceEdits.h"
#include "tests/TestOps.h"
#include "tests/model/Printers.h"
#include "tests/model/TestSequence.h"

namespace gpufuzz {
namespace {

using testing::testOp;

using testing::parseTestSequence;

TEST(SequenceParse, EmptyAndCommentOnlyFilesAreEmptySequences) {
  for (std::string_view text :
       {"", "\n\n", "# gpufuzz sequence\n", "  # just words\n\t\n", "# gpufuzz sequence\r\n\r\n"}) {
    const Sequence s = parseTestSequence(text);
    EXPECT_TRUE(s.ops.empty()) << text;
    EXPECT_EQ(s.directives, Directives{}) << text;
  }
}

TEST(SequenceParse, TheContractsExample) {
  const Sequence s = parseTestSequence(
      "# gpufuzz sequence\n# backend: sim\n# policy: context-first\n# faults: max-26.5.0\n"
      "# expect: hang at 3\ncreate r0\ndestroy r0\ncreate r1\n");
  EXPECT_EQ(s.directives.backend, "sim");
  EXPECT_EQ(s.directives.policy, "context-first");
  EXPECT_EQ(s.directives.faults, "max-26.5.0");
  EXPECT_EQ(s.directives.expect, (Expectation{OutcomeClass::Hang, At{3}}));
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0], testOp("create", {"r0"}));
  EXPECT_EQ(s.ops[1], testOp("destroy", {"r0"}));
  EXPECT_EQ(s.ops[2], testOp("create", {"r1"}));
  EXPECT_EQ(s.ops[0].line, 6);
  EXPECT_EQ(s.ops[2].line, 8);
}

TEST(SequenceParse, EveryOperationWithEveryKey) {
  const Sequence s = parseTestSequence(
      "create r0 width=4096 height=1\n"
      "draw r0 triangles=1024 seed=4294967295\n"
      "set_textures r0 count=16 size=2048 seed=5\n"
      "set_textures r0 count=0\n"
      "sync r0\nread_back r0\n"
      "ctx_create c0\nbuf_create c0 b0 bytes=2147483648\nbuf_create c0 b1 bytes=1\n"
      "ctx_destroy c0\nbuf_destroy b0\ndestroy r0\n");
  const std::vector<Operation> expected = {
      testOp("create", {"r0"}, {{"width", 4096}, {"height", 1}}),
      testOp("draw", {"r0"}, {{"triangles", 1024}, {"seed", 4294967295u}}),
      testOp("set_textures", {"r0"}, {{"seed", 5}, {"count", 16}, {"size", 2048}}),
      testOp("set_textures", {"r0"}, {{"count", 0}}),
      testOp("sync", {"r0"}),
      testOp("read_back", {"r0"}),
      testOp("ctx_create", {"c0"}),
      testOp("buf_create", {"c0", "b0"}, {{"bytes", 1ULL << 31}}),
      testOp("buf_create", {"c0", "b1"}, {{"bytes", 1}}),
      testOp("ctx_destroy", {"c0"}),
      testOp("buf_destroy", {"b0"}),
      testOp("destroy", {"r0"}),
  };
  EXPECT_EQ(s.ops, expected);
}

TEST(SequenceParse, AbsentKeysTakeTheirDefaultsInAnyOrder) {
  const Sequence s =
      parseTestSequence("create r0\ndraw r0 seed=2 triangles=3\nset_textures r0 size=8\n");
  EXPECT_EQ(s.ops[0].arg("width"), 64u);
  EXPECT_EQ(s.ops[0].arg("height"), 64u);
  EXPECT_EQ(s.ops[1].arg("triangles"), 3u);
  EXPECT_EQ(s.ops[1].arg("seed"), 2u);
  EXPECT_EQ(s.ops[2].arg("count"), 1u);
  EXPECT_EQ(s.ops[2].arg("size"), 8u);
  EXPECT_EQ(s.ops[2].arg("seed"), 0u);
  EXPECT_EQ(parseTestSequence("create r0 width=007").ops[0].arg("width"), 7u)
      << "leading zeros are still decimal";
}

TEST(SequenceParse, CommentsBlanksTabsAndCrlf) {
  const Sequence s = parseTestSequence(
      "\t# header\r\n\r\n  create\tr0   width=8 # a comment # with more\r\n"
      "draw r0#no space before the comment\r\n\t\tsync  r0\t\r\n#create r9");
  ASSERT_EQ(s.ops.size(), 3u);
  EXPECT_EQ(s.ops[0], testOp("create", {"r0"}, {{"width", 8}}));
  EXPECT_EQ(s.ops[1], testOp("draw", {"r0"}));
  EXPECT_EQ(s.ops[2], testOp("sync", {"r0"}));
  EXPECT_EQ(s.ops[2].line, 5);
}

TEST(SequenceParse, DirectivesAndWhatIsOnlyAComment) {
  const Sequence s = parseTestSequence(
      "# gpufuzz sequence\n"
      "#backend:cuda\n"
      "#\tseed:   18446744073709551615  \n"
      "# Note: capitalised, so a comment\n"
      "# expect : hang (space before the colon, so a comment)\n"
      "# note: first\n"
      "# found: gpufuzz fuzz --seed 7, run 3 # and a hash\n"
      "# note:  second, with: colons  \n"
      "# expect.sim: hang at 2\n"
      "# expect.cuda: error at end\n"
      "# expect: leak\n"
      "# policy: no-texture-wait\n"
      "# faults: plans/my-plan.json\n"
      "create r0\n"
      "# backend: sim\n"
      "# colour: red\n"
      "# expect: spin\n"
      "destroy r0\n");
  const Directives& d = s.directives;
  EXPECT_EQ(d.backend, "cuda");
  EXPECT_EQ(d.seed, 18446744073709551615ULL);
  EXPECT_EQ(d.notes, (std::vector<std::string>{"first", "second, with: colons"}));
  EXPECT_EQ(d.found, "gpufuzz fuzz --seed 7, run 3 # and a hash");
  EXPECT_EQ(d.expectOn.at("sim"), (Expectation{OutcomeClass::Hang, At{2}}));
  EXPECT_EQ(d.expectOn.at("cuda"), (Expectation{OutcomeClass::Error, At{At::kEnd}}));
  EXPECT_EQ(d.expectOn.size(), 2u);
  EXPECT_EQ(d.expect, (Expectation{OutcomeClass::Leak, std::nullopt}));
  EXPECT_EQ(d.policy, "no-texture-wait");
  EXPECT_EQ(d.faults, "plans/my-plan.json");
  EXPECT_EQ(s.ops.size(), 2u);
}

TEST(SequenceParse, EveryExpectationForm) {
  const std::vector<std::pair<std::string, Expectation>> cases = {
      {"pass", {}},
      {"hang", {OutcomeClass::Hang, std::nullopt}},
      {"spin at 1", {OutcomeClass::Spin, At{1}}},
      {"slow\tat\t2", {OutcomeClass::Slow, At{2}}},
      {"crash at end", {OutcomeClass::Crash, At{At::kEnd}}},
      {"error at 2", {OutcomeClass::Error, At{2}}},
      {"mismatch at 2", {OutcomeClass::Mismatch, At{2}}},
      {"leak", {OutcomeClass::Leak, std::nullopt}},
      {"invalid at 1", {OutcomeClass::Invalid, At{1}}},
  };
  for (const auto& [text, e] : cases) {
    EXPECT_EQ(
        parseTestSequence("# expect: " + text + "\ncreate r0\nread_back r0\n").directives.expect, e)
        << text;
  }
}

TEST(SequenceParse, EveryBackendAndPolicy) {
  for (std::string_view b : {"sim", "cuda", "cuda-async", "opencl", "vulkan", "auto"}) {
    EXPECT_EQ(parseTestSequence("# backend: " + std::string(b)).directives.backend, b);
  }
  for (std::string_view p : {"shipped", "context-first", "no-destroy-sync", "no-texture-wait"}) {
    EXPECT_EQ(parseTestSequence("# policy: " + std::string(p)).directives.policy, p);
  }
}

// `# model:` names the model the operations are of: a built-in name here; without it, `all`.
TEST(SequenceParse, TheModelDirectiveNamesABuiltInModelAndAnOverrideWins) {
  const Sequence plain = parseTestSequence("create r0\nctx_create c0\n");
  EXPECT_EQ(plain.directives.model, std::nullopt);
  EXPECT_EQ(&plain.lifecycle(), &builtinModel("all"));
  EXPECT_EQ(&defaultModel(), &builtinModel("all"));
  EXPECT_EQ(plain.ops[1].form->model, &builtinModel("all"));

  const Sequence renderer = parseTestSequence("# model: renderer\ncreate r0\ndraw r0\n");
  EXPECT_EQ(renderer.directives.model, "renderer");
  EXPECT_EQ(renderer.model, &builtinModel("renderer"));
  EXPECT_EQ(renderer.ops[1].form->model, &builtinModel("renderer"));
  EXPECT_EQ(printSequence(renderer), "# gpufuzz sequence\n# model: renderer\ncreate r0\ndraw r0\n");
  EXPECT_EQ(parseTestSequence(printSequence(renderer)).model, &builtinModel("renderer"));

  const Sequence device = parseTestSequence("# model: device\nctx_create c0\nbuf_create c0 b0\n");
  EXPECT_EQ(device.model, &builtinModel("device"));

  // The override (`--model`) wins over the directive, which is kept as written.
  const Sequence overridden =
      parseSequence("# model: renderer\nctx_create c0\n", "t.seq", &builtinModel("device"));
  EXPECT_EQ(overridden.model, &builtinModel("device"));
  EXPECT_EQ(overridden.directives.model, "renderer");
  EXPECT_THROW(parseSequence("ctx_create c0\n", "t.seq", &builtinModel("renderer")), InputError);
}

struct ErrorCase {
  std::string text;
  int line, column;
  std::string message;  // a part of the message
};

// Each case: the text, where the error must point, and what the message must say.
const std::vector<ErrorCase> kErrors = {
    // Operations and names.
    {"frob r0", 1, 1, "unknown operation 'frob' in model all: expected one of create, draw, sync"},
    {"create r0\n  Draw r0", 2, 3, "unknown operation 'Draw'"},
    {"create", 1, 8, "missing name; the form is create R [width=1..4096] [height=1..4096]"},
    {"create width=3", 1, 8, "missing name"},
    {"ctx_create c0\nbuf_create c0", 2, 15, "missing name; the form is buf_create C B"},
    {"ctx_create c0\nbuf_create c0 bytes=4", 2, 15, "missing name"},
    {"create r0 r1", 1, 11, "extra name 'r1'; the form is create R"},
    {"create r0\nsync r0 r0", 2, 9, "extra name 'r0'"},
    {"create r0\ndraw r0 seed=1 r1", 2, 16, "extra name 'r1'"},
    {"create R0", 1, 8, "bad name 'R0': names match [a-z][a-z0-9_]*, at most 32 characters"},
    {"create 0r", 1, 8, "bad name '0r'"},
    {"create a-b", 1, 8, "bad name 'a-b'"},
    {"create abcdefghijklmnopqrstuvwxyz0123456", 1, 8, "at most 32 characters"},
    {"ctx_create c0\nbuf_create c0 B0", 2, 15, "bad name 'B0'"},
    // Keys and values.
    {"create r0 depth=3", 1, 11, "unknown key 'depth' for create; the form is create R [width="},
    {"create r0\nsync r0 seed=1", 2, 9, "sync takes no key=value arguments"},
    {"ctx_create c0 bytes=1", 1, 15, "ctx_create takes no key=value arguments"},
    {"create r0 width=3 width=4", 1, 19, "duplicate key 'width'"},
    {"create r0 width 3", 1, 11, "missing '=' after 'width': write width=VALUE"},
    {"create r0 =3", 1, 11, "missing key before '='"},
    {"create r0 width=", 1, 17, "width= has no value: width takes an integer in 1..4096"},
    {"create r0 width=abc", 1, 17,
     "width=abc is not a decimal integer: width takes an integer in 1..4096"},
    {"create r0 width=+5", 1, 17, "is not a decimal integer"},
    {"create r0 width=0x10", 1, 17, "is not a decimal integer"},
    {"create r0 width=1.5", 1, 17, "is not a decimal integer"},
    {"create r0 width=-5", 1, 17, "width=-5 is negative: width takes an integer in 1..4096"},
    {"create r0 width=0", 1, 17, "width=0 is out of bounds: width takes an integer in 1..4096"},
    {"create r0 width=4097", 1, 17, "width=4097 is out of bounds"},
    {"create r0 height=99999999999999999999999", 1, 18,
     "is out of bounds: height takes an integer in 1..4096"},
    {"create r0\ndraw r0 triangles=0", 2, 19, "triangles takes an integer in 1..1024"},
    {"create r0\ndraw r0 triangles=1025", 2, 19, "triangles=1025 is out of bounds"},
    {"create r0\ndraw r0 seed=4294967296", 2, 14,
     "seed=4294967296 is out of bounds: seed takes an integer in 0..4294967295"},
    {"create r0\nset_textures r0 count=17", 2, 23,
     "count=17 is out of bounds: count takes an integer in 0..16"},
    {"create r0\nset_textures r0 size=0", 2, 22, "size takes an integer in 1..2048"},
    {"create r0\nset_textures r0 size=2049", 2, 22, "size=2049 is out of bounds"},
    {"create r0\nset_textures r0 seed=-1", 2, 22, "seed=-1 is negative"},
    {"ctx_create c0\nbuf_create c0 b0 bytes=0", 2, 24, "bytes takes an integer in 1..2147483648"},
    {"ctx_create c0\nbuf_create c0 b0 bytes=2147483649", 2, 24,
     "bytes=2147483649 is out of bounds"},
    // The model's preconditions.
    {"draw r0", 1, 6, "r0 is not alive: nothing created it"},
    {"create r0\ndestroy r0\ndraw r0", 3, 6, "r0 is not alive: it was destroyed"},
    {"create r0\ndestroy r0\ncreate r0", 3, 8, "name r0 was already used"},
    {"create r0\nctx_create r0", 2, 12, "name r0 was already used"},
    {"ctx_create c0\ndraw c0", 2, 6, "c0 is a context, draw needs a renderer"},
    {"create r0\nbuf_create r0 b0", 2, 12, "r0 is a renderer, buf_create needs a context"},
    {"ctx_create c0\nbuf_create c0 c0", 2, 15, "name c0 is given twice"},
    {"ctx_create c0\nctx_destroy c0\nbuf_create c0 b0", 3, 12, "c0 is not alive: it was destroyed"},
    {"ctx_create c0\nbuf_create c0 b0\nbuf_destroy b0\nbuf_destroy b0", 4, 13,
     "b0 is not alive: it was destroyed"},
    {"ctx_create c0\nbuf_create c0 b0\nctx_destroy b0", 3, 13,
     "b0 is a buffer, ctx_destroy needs a context"},
    // The model's vocabulary: an operation of another model is unknown in this one.
    {"# model: renderer\nctx_create c0", 2, 1,
     "unknown operation 'ctx_create' in model renderer: expected one of create, draw, sync, "
     "set_textures, read_back, destroy"},
    {"# model: device\ncreate r0", 2, 1, "unknown operation 'create' in model device"},
    {"# model: metal\ncreate r0", 1, 10, "unknown model 'metal': the built-in models are"},
    {"# model: metal", 1, 10, "unknown model 'metal'"},
    {"# model: a b", 1, 10, "model takes one model name or path, without spaces"},
    {"# model: all\n# model: all", 2, 3, "duplicate directive 'model'"},
    // Places: tabs count as one column, CR is no column, comment lines still count as lines.
    {"create\tr0\tbogus=1", 1, 11, "unknown key 'bogus'"},
    {"create r0\r\ncreate r0\r\n", 2, 8, "name r0 was already used"},
    {"# a\n\n# b\ncreate r0\n\n# c\nsync r1 # d", 7, 6, "r1 is not alive"},
    // Directives.
    {"# colour: red", 1, 3,
     "unknown directive 'colour': expected one of backend, target, policy, faults"},
    {"#colour: red", 1, 2, "unknown directive 'colour'"},
    {"#  \texpect.hip: hang", 1, 5, "unknown directive 'expect.hip'"},
    {"# backend: sim\n# backend: cuda", 2, 3,
     "duplicate directive 'backend': first given on line 1"},
    {"# expect: hang\n\n# expect: spin", 3, 3, "duplicate directive 'expect'"},
    {"# seed: 1\n# seed: 1", 2, 3, "duplicate directive 'seed'"},
    {"# found: x\n# found: x", 2, 3, "duplicate directive 'found'"},
    {"# backend:", 1, 11, "directive 'backend' needs a value"},
    {"# note:   \t", 1, 12, "directive 'note' needs a value"},
    {"# backend: metal", 1, 12,
     "unknown backend 'metal': expected sim, cuda, cuda-async, opencl, vulkan, auto"},
    {"# expect.metal: pass", 1, 3, "unknown directive 'expect.metal'"},
    {"# expect.cuda-async: error at 1", 1, 22,
     "expect.cuda-async names operation 1, but the sequence has 0"},
    {"# backend: sim cuda", 1, 12, "unknown backend 'sim cuda'"},
    {"# policy: fast", 1, 11,
     "unknown policy 'fast': expected shipped, context-first, no-destroy-sync, no-texture-wait"},
    {"# faults: my plan", 1, 11, "faults takes one plan name or path, without spaces"},
    {"# schedule: sometimes", 1, 13,
     "unknown schedule 'sometimes': expected os, pct, collide, mix"},
    {"# schedule: os\n# schedule: pct", 2, 3, "duplicate directive 'schedule'"},
    {"# try: -1", 1, 8, "try '-1' is negative"},
    {"# try: x", 1, 8, "try 'x' is not a decimal integer"},
    {"# expect: boom", 1, 11, "unknown outcome class 'boom': expected pass, hang, spin"},
    {"# expect: Hang", 1, 11, "unknown outcome class 'Hang'"},
    {"# expect: hang 3", 1, 16, "expected 'at N' or 'at end' after the class, got '3'"},
    {"# expect: pass at 1", 1, 16, "pass takes no 'at'"},
    {"# expect: leak at end", 1, 16, "leak takes no 'at'"},
    {"# expect: hang at", 1, 16, "missing N or 'end' after 'at'"},
    {"# expect: hang at 0", 1, 19, "at 0 is out of bounds: N is the 1-based operation ordinal"},
    {"# expect: hang at -1", 1, 19, "at -1 is negative"},
    {"# expect: hang at x", 1, 19, "at x is not a decimal integer"},
    {"# expect: hang at 4294967296", 1, 19, "is out of bounds"},
    {"# expect: hang at 1 now", 1, 21, "unexpected 'now' after the place"},
    {"# expect.sim:\thang   at  end  x", 1, 31, "unexpected 'x'"},
    {"# expect: hang at 2\ncreate r0", 1, 11,
     "expect names operation 2, but the sequence has 1 operations"},
    {"# expect.cuda: error at 1", 1, 16, "expect.cuda names operation 1, but the sequence has 0"},
    {"# seed: -1", 1, 9, "seed '-1' is negative: seed takes an integer in 0..18446744073709551615"},
    {"# seed: 18446744073709551616", 1, 9, "is out of bounds"},
    {"# seed: 12ab", 1, 9, "is not a decimal integer"},
};

TEST(SequenceParse, ErrorsPointAtTheOffendingTokenAndSayWhatIsAccepted) {
  for (const ErrorCase& c : kErrors) {
    SCOPED_TRACE(c.text);
    try {
      parseTestSequence(c.text);
      ADD_FAILURE() << "parsed without error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "t.seq");
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    }
  }
}

/// A model whose `alloc` may fail with oom or host-oom, and nothing else may fail.
const LifecycleModel& markedModel() {
  static const LifecycleModel& m = internModel(
      parseModel("model marked\nresource pool prefix p\nresource buf prefix b owner pool\n"
                 "op pool_create -> pool\nop pool_destroy pool!\n"
                 "op alloc pool -> buf bytes=64 (1..4096) fails:oom|host-oom\nop free buf!\n"
                 "release buf pool\n",
                 "marked.model"));
  return m;
}

Sequence parseMarked(const std::string& text) {
  return parseSequence(text, "m.seq", &markedModel());
}

TEST(SequenceParse, AMarkEndsAnOperationLineAndPrintsBack) {
  const Sequence s = parseMarked(
      "pool_create p0\nalloc p0 b0 !oom\nalloc p0 b1 bytes=8 !host-oom@3 # a comment\n"
      "free b0\n");
  ASSERT_EQ(s.ops.size(), 4U);
  EXPECT_FALSE(s.ops[0].mark.has_value());
  ASSERT_TRUE(s.ops[1].mark.has_value());
  EXPECT_EQ(s.ops[1].mark->word, FailWord::Oom);
  EXPECT_EQ(s.ops[1].mark->nth, 1U);
  ASSERT_TRUE(s.ops[2].mark.has_value());
  EXPECT_EQ(s.ops[2].mark->word, FailWord::HostOom);
  EXPECT_EQ(s.ops[2].mark->nth, 3U);
  EXPECT_EQ(s.ops[2].arg("bytes"), 8U);
  EXPECT_EQ(normalizedOperations(s),
            "pool_create p0\nalloc p0 b0 !oom\nalloc p0 b1 bytes=8 !host-oom@3\nfree b0\n");
  // `@1` is the default: written without it, and equal to it.
  EXPECT_EQ(parseMarked("pool_create p0\nalloc p0 b0 !oom@1\n").ops,
            parseMarked("pool_create p0\nalloc p0 b0 !oom\n").ops);
  EXPECT_NE(parseMarked("pool_create p0\nalloc p0 b0 !oom\n").ops,
            parseMarked("pool_create p0\nalloc p0 b0\n").ops)
      << "a mark is part of the operation";
  // A thread prefix and a mark go together.
  EXPECT_EQ(parseMarked("pool_create p0\n@1 alloc p0 b0 !oom@64\n").ops[1].thread, 1U);
}

// A shrink keeps marks on what it keeps, removes them, and lowers N (docs/failures.md).
TEST(ShrinkCandidates, AMarkGoesOrCountsToAnEarlierCall) {
  const Sequence s = parseMarked("pool_create p0\nalloc p0 b0 !oom@6\nfree b0\n");
  std::vector<std::string> edits;
  for (const auto& [edit, candidate] : shrinkCandidates(s)) {
    if (edit.kind == Edit::Kind::Unmark || edit.kind == Edit::Kind::MarkNth)
      edits.push_back(edit.describe(s) + " -> " + operationText(candidate.ops[1]));
    if (edit.kind == Edit::Kind::Remove && candidate.ops.size() == 2) {
      EXPECT_EQ(candidate.ops[1].mark, s.ops[1].mark) << "a kept operation keeps its mark";
    }
  }
  EXPECT_EQ(edits, (std::vector<std::string>{
                       "unmark 2 (alloc p0 b0 !oom@6) -> alloc p0 b0",
                       "@1 at 2 (alloc p0 b0 !oom@6) -> alloc p0 b0 !oom",
                       "@3 at 2 (alloc p0 b0 !oom@6) -> alloc p0 b0 !oom@3",
                   }));
}

TEST(SequenceParse, EveryBadMarkIsPlaced) {
  struct Case {
    std::string text;
    int line, column;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"pool_create p0\nalloc p0 b0 !oops\n", 2, 14, "unknown failure 'oops' in a mark"},
      {"pool_create p0\nalloc p0 b0 !\n", 2, 14, "unknown failure '' in a mark"},
      {"pool_create p0\nalloc p0 b0 !oom@0\n", 2, 18, "expected a call count in 1..64"},
      {"pool_create p0\nalloc p0 b0 !oom@65\n", 2, 18, "expected a call count in 1..64"},
      {"pool_create p0\nalloc p0 b0 !oom@\n", 2, 18, "expected a call count in 1..64"},
      {"pool_create p0\nalloc p0 b0 !oom@x\n", 2, 18, "expected a call count in 1..64"},
      {"pool_create p0\nalloc p0 b0 !oom@-1\n", 2, 18, "expected a call count in 1..64"},
      {"pool_create p0\nalloc p0 b0 !oom !oom\n", 2, 13, "a second mark"},
      {"pool_create p0\nalloc p0 !oom b0\n", 2, 10, "a mark ends the line"},
      {"pool_create p0\nalloc p0 b0 !oom bytes=8\n", 2, 13, "a mark ends the line"},
      {"pool_create p0 !oom\n", 1, 17,
       "pool_create cannot fail with oom: its model declares no fails: for it"},
      {"pool_create p0\nalloc p0 b0 !lost\n", 2, 14,
       "alloc cannot fail with lost: its model declares fails:oom|host-oom"},
      {"pool_create p0\n!oom\n", 2, 1,
       "a mark ends an operation line, and this line has no "
       "operation"},
      {"pool_create p0\n@1 !oom\n", 2, 4, "this line has no operation"},
      // A directive's text may hold '!': only operation lines carry marks.
      {"# note: x !oom\npool_create p0\nfree !oom\n", 3, 7, "free cannot fail with oom"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      parseMarked(c.text);
      ADD_FAILURE() << "parsed without error";
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.column(), c.column) << e.what();
      EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST(SequenceParse, ErrorTextReadsFileLineColumnMessage) {
  try {
    parseSequence("create r0\ndestroy r0\ncreate r0\n", "corpus/x.seq");
    FAIL() << "parsed without error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "corpus/x.seq:3:8: name r0 was already used: a name is introduced once, never "
              "reused");
  }
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpufuzz_model_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::filesystem::path dir_;
};

using LoadSequence = TempDir;

TEST_F(LoadSequence, ReadsAFileAndNamesItInErrors) {
  const std::string good = write("good.seq", "# backend: sim\ncreate r0\nread_back r0\n");
  const Sequence s = loadSequence(good);
  EXPECT_EQ(s.directives.backend, "sim");
  EXPECT_EQ(s.ops.size(), 2u);

  const std::string bad = write("bad.seq", "create r0\ndraw r1\n");
  try {
    loadSequence(bad);
    FAIL() << "loaded without error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), bad);
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.column(), 6);
  }
}

TEST_F(LoadSequence, AMissingFileOrADirectoryIsAnInputErrorNamingThePath) {
  const std::string missing = (dir_ / "missing.seq").string();
  for (const std::string& path : {missing, dir_.string()}) {
    try {
      loadSequence(path);
      ADD_FAILURE() << "loaded " << path;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

TEST(ValidateSequence, AcceptsValidSequencesAndPlacesTheFirstViolation) {
  Sequence s = parseTestSequence("create r0\ndraw r0\ndestroy r0\n");
  EXPECT_NO_THROW(validateSequence(s, "v.seq"));

  s.ops.push_back(testOp("sync", {"r0"}, {}, 7));
  try {
    validateSequence(s, "v.seq");
    FAIL() << "validated";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "v.seq:7:1: sync r0: r0 is not alive: it was destroyed");
  }

  s.ops.back().line = 0;
  try {
    validateSequence(s, "v.seq");
    FAIL() << "validated";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "v.seq: operation 4 (sync r0: r0 is not alive: it was destroyed)");
  }

  Sequence outOfBounds;
  outOfBounds.ops = {testOp("create", {"r0"}, {{"width", 0}})};
  EXPECT_THROW(validateSequence(outOfBounds, "v.seq"), InputError);
}

TEST(SequenceParse, AThreadedFindingsScheduleAndTryComeBackAsWritten) {
  const Sequence seq = parseTestSequence("# schedule: collide\n# try: 4\ncreate r0\n");
  EXPECT_EQ(seq.directives.schedule, "collide");
  EXPECT_EQ(seq.directives.attempt, 4U);
  const std::string text = printSequence(seq);
  EXPECT_NE(text.find("# schedule: collide\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# try: 4\n"), std::string::npos) << text;
  EXPECT_EQ(parseTestSequence(text).directives, seq.directives);
}

}  // namespace
}  // namespace gpufuzz
