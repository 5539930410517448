// SequenceFormatTest.cpp: printing `.seq` text, renumbering names, expectations per backend.
#include <gtest/gtest.h>

#include "model/Sequence.h"
#include "tests/TestOps.h"
#include "tests/model/Printers.h"
#include "tests/model/TestSequence.h"

namespace gpufuzz {
namespace {

using testing::testOp;

using testing::parseTestSequence;

TEST(SequencePrint, HeaderDirectivesInAFixedOrderNotesLastThenOperations) {
  Sequence s;
  s.directives.notes = {"why it matters", "second"};
  s.directives.found = "gpufuzz fuzz --seed 9";
  s.directives.seed = 42;
  s.directives.expectOn["cuda"] = Expectation{OutcomeClass::Error, At{2}};
  s.directives.expectOn["sim"] = Expectation{OutcomeClass::Hang, At{At::kEnd}};
  s.directives.expect = Expectation{OutcomeClass::Leak, std::nullopt};
  s.directives.faults = "max-26.5.0";
  s.directives.policy = "context-first";
  s.directives.backend = "sim";
  s.directives.model = "all";
  s.ops = {testOp("create", {"r0"}, {{"width", 8}}),
           testOp("draw", {"r0"}, {{"triangles", 9}, {"seed", 3}}), testOp("destroy", {"r0"})};
  const std::string text = printSequence(s);
  EXPECT_EQ(text,
            "# gpufuzz sequence\n"
            "# backend: sim\n"
            "# policy: context-first\n"
            "# faults: max-26.5.0\n"
            "# model: all\n"
            "# expect: leak\n"
            "# expect.sim: hang at end\n"
            "# expect.cuda: error at 2\n"
            "# seed: 42\n"
            "# found: gpufuzz fuzz --seed 9\n"
            "# note: why it matters\n"
            "# note: second\n"
            "create r0 width=8\n"
            "draw r0 triangles=9 seed=3\n"
            "destroy r0\n");
  const Sequence back = parseTestSequence(text);
  EXPECT_EQ(back.directives, s.directives);
  EXPECT_EQ(back.ops, s.ops);
}

TEST(SequencePrint, AnEmptySequenceIsTheHeaderAlone) {
  EXPECT_EQ(printSequence({}), "# gpufuzz sequence\n");
  const Sequence back = parseTestSequence(printSequence({}));
  EXPECT_TRUE(back.ops.empty());
  EXPECT_EQ(back.directives, Directives{});
}

TEST(SequencePrint, HandWrittenTextComesBackCanonical) {
  const Sequence s = parseTestSequence(
      "#backend:sim\n\n  create\tr0 width=64 height=010 # comment\r\ndraw r0 seed=0 triangles=4\n");
  EXPECT_EQ(printSequence(s), "# gpufuzz sequence\n# backend: sim\ncreate r0 height=10\ndraw r0\n");
}

TEST(SequenceNormalize, RenumbersPerKindInOrderOfFirstAppearance) {
  const Sequence s = parseTestSequence(
      "# expect: hang at 5\n"
      "create foo width=3\nctx_create zed\ncreate alpha\nbuf_create zed q\nbuf_create zed a\n"
      "ctx_create c0\nbuf_create c0 r0\ndraw foo seed=2\nbuf_destroy a\nctx_destroy zed\n"
      "destroy alpha\n");
  EXPECT_EQ(normalizedOperations(s),
            "create r0 width=3\nctx_create c0\ncreate r1\nbuf_create c0 b0\nbuf_create c0 b1\n"
            "ctx_create c1\nbuf_create c1 b2\ndraw r0 seed=2\nbuf_destroy b1\nctx_destroy c0\n"
            "destroy r1\n");
  const Sequence r = renumbered(s);
  EXPECT_EQ(r.directives, s.directives);
  ASSERT_EQ(r.ops.size(), s.ops.size());
  EXPECT_EQ(r.ops[0].arg("width"), 3u);
  EXPECT_EQ(r.ops[0].line, s.ops[0].line);
  EXPECT_EQ(renumbered(r).ops, r.ops) << "renumbering is idempotent";
  EXPECT_EQ(normalizedOperations(r), normalizedOperations(s));
}

TEST(SequenceNormalize, SequencesThatDifferOnlyInNamesNormalizeAlike) {
  const Sequence a = parseTestSequence("create x\ncreate y\ndestroy x\ncreate z\n");
  const Sequence b = parseTestSequence("create r5\ncreate r0\ndestroy r5\ncreate r2\n");
  EXPECT_EQ(normalizedOperations(a), normalizedOperations(b));
  EXPECT_EQ(normalizedOperations(a), "create r0\ncreate r1\ndestroy r0\ncreate r2\n");
  EXPECT_NE(normalizedOperations(a),
            normalizedOperations(parseTestSequence("create x\ncreate y\ndestroy y\n")));
  EXPECT_EQ(normalizedOperations({}), "");
}

TEST(SequenceExpectation, BackendSpecificThenGeneralThenPass) {
  const Expectation hang{OutcomeClass::Hang, At{3}};
  const Expectation error{OutcomeClass::Error, At{2}};
  const Expectation leak{OutcomeClass::Leak, std::nullopt};

  Sequence s;
  EXPECT_EQ(s.expectationFor("sim"), Expectation{});
  EXPECT_EQ(s.expectationFor("cuda"), Expectation{});

  s.directives.expect = hang;
  EXPECT_EQ(s.expectationFor("sim"), hang);
  EXPECT_EQ(s.expectationFor("cuda"), hang);

  s.directives.expectOn["cuda"] = error;
  EXPECT_EQ(s.expectationFor("sim"), hang);
  EXPECT_EQ(s.expectationFor("cuda"), error);

  s.directives.expectOn["sim"] = leak;
  s.directives.expect.reset();
  EXPECT_EQ(s.expectationFor("sim"), leak);
  EXPECT_EQ(s.expectationFor("cuda"), error);
  EXPECT_EQ(s.expectationFor("opencl"), Expectation{});

  s.directives.expectOn["vulkan"] = Expectation{OutcomeClass::Invalid, At{2}};
  EXPECT_EQ(s.expectationFor("vulkan"), (Expectation{OutcomeClass::Invalid, At{2}}));
  EXPECT_EQ(s.expectationFor("auto"), Expectation{}) << "only a resolved backend has its own";
}

}  // namespace
}  // namespace gpufuzz
