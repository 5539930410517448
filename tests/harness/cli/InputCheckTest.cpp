// InputCheckTest.cpp: replay, shrink, explain and promote read and check every input (sequence
// files, `faults` directives and the plans they name, --faults plans, options) before any child
// runs: bad input exits 2 with its place (FILE:LINE:COLUMN: message), never 3 with a child's
// rejection.
#include <gtest/gtest.h>

#include "harness/base/AtomicFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

/// A plan whose first line is not a rule.
constexpr const char* kBadPlan = "frobnicate at buf_free\n";
/// The seed's hang under context-first, with `faults` on line 3 (value at column 11).
std::string hangSequence(const std::string& faults) {
  return "# backend: sim\n# policy: context-first\n# faults: " + faults +
         "\ncreate a\ndestroy a\ncreate b\n";
}

void expectInputError(const testing::CommandResult& r, const std::string& place) {
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(place), std::string::npos) << "expected the place " << place << "\n"
                                                     << r.output;
  EXPECT_EQ(r.output.find("harness failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("fails:"), std::string::npos) << "a child ran:\n" << r.output;
}

class InputCheck : public ::testing::TestWithParam<std::string> {
 protected:
  testing::ScratchDir dir;
  std::string path(const std::string& name) const { return (dir.path() / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    writeFileAtomically(path(name), text);
    return path(name);
  }
  testing::CommandResult run(const std::string& args) const {
    return testing::gpufuzz(GetParam() + " --no-stacks --deadline 150 " + args);
  }
};

TEST_P(InputCheck, AFaultsDirectiveNamingAMissingPlanIsPlacedAtTheDirective) {
  const std::string seq = write("missing.seq", hangSequence("nothing-here.plan"));
  const auto r = run(seq);
  expectInputError(r, seq + ":3:11: faults: no fault plan");
}

TEST_P(InputCheck, AMalformedPlanNamedByADirectiveIsPlacedInThePlan) {
  const std::string plan = write("bad.plan", kBadPlan);
  const std::string seq = write("bad-plan.seq", hangSequence("bad.plan"));
  const auto r = run(seq);
  expectInputError(r, plan + ":1:");
  EXPECT_NE(r.output.find("named by " + seq + ":3"), std::string::npos) << r.output;
}

TEST_P(InputCheck, AMalformedPlanGivenByTheFaultsOptionIsPlacedInThePlan) {
  const std::string plan = write("bad.plan", kBadPlan);
  const std::string seq = write("ok.seq", hangSequence("max-26.5.0"));
  expectInputError(run("--faults " + plan + " " + seq), plan + ":1:");
}

TEST_P(InputCheck, AMissingPlanGivenByTheFaultsOptionIsRefused) {
  const std::string seq = write("ok.seq", hangSequence("max-26.5.0"));
  expectInputError(run("--faults " + path("absent.plan") + " " + seq),
                   "no fault plan " + path("absent.plan"));
}

TEST_P(InputCheck, AMalformedSequenceIsPlaced) {
  const std::string seq = write("typo.seq", "# backend: sim\ncreate a\nfrob a\n");
  expectInputError(run(seq), seq + ":3:1: unknown operation");
}

TEST_P(InputCheck, BadThreadPrefixesAndCountsArePlaced) {
  const std::string beyond = write("beyond.seq", "# backend: sim\ncreate a\n@8 create b\n");
  expectInputError(run(beyond), beyond + ":3:1: '@8'");
  const std::string word = write("word.seq", "# backend: sim\n@x create a\n");
  expectInputError(run(word), word + ":2:1: '@x'");
  const std::string bare = write("bare.seq", "@1 # backend: sim\ncreate a\n");
  expectInputError(run(bare), bare + ":1:1: @1 prefixes no operation");
  const std::string count =
      write("count.seq", "# backend: sim\n# threads: 3\ncreate a\n@1 create b\n");
  expectInputError(run(count), count + ":2:12: threads says 3");
}

INSTANTIATE_TEST_SUITE_P(Subcommands, InputCheck, ::testing::Values("replay", "shrink", "explain"));

TEST(InputCheckReplay, ABadSecondFileMeansNothingRuns) {
  testing::ScratchDir dir;
  const auto good = (dir.path() / "good.seq").string();
  const auto bad = (dir.path() / "bad.seq").string();
  writeFileAtomically(good, hangSequence("max-26.5.0"));
  writeFileAtomically(bad, hangSequence("nothing-here.plan"));
  const auto r = testing::gpufuzz("replay --no-stacks --deadline 150 " + good + " " + bad);
  expectInputError(r, bad + ":3:11:");
  EXPECT_EQ(r.output.find("ok  "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("MISS"), std::string::npos) << r.output;
}

TEST(InputCheckOptions, ShrinkAndExplainCheckConfirmationsFirst) {
  testing::ScratchDir dir;
  const auto seq = (dir.path() / "hang.seq").string();
  writeFileAtomically(seq, hangSequence("max-26.5.0"));
  for (const std::string command : {"shrink", "explain"}) {
    const auto r =
        testing::gpufuzz(command + " --no-stacks --deadline 150 --confirmations 0 " + seq);
    expectInputError(r, "--confirmations");
  }
}

/// A finding whose minimal.seq names `faults`: promote checks it before any backend runs it.
std::filesystem::path recordFinding(const std::filesystem::path& findings,
                                    const std::string& faults) {
  Finding f = testing::simFinding("create a\ndestroy a\ncreate b\n", OutcomeClass::Hang, 3,
                                  "create", "context-first", faults);
  f.reproduced = 5;
  f.confirmations = 5;
  FindingStore store(findings);
  return store.record(f).second;
}

/// The 1-based line of `key`'s directive in a sequence file.
int directiveLine(const std::filesystem::path& file, const std::string& key) {
  const Sequence seq = loadSequence(file.string());
  return seq.directivePlaces.at(key).first;
}

TEST(InputCheckPromote, AMissingPlanInTheFindingIsPlacedAtItsDirective) {
  testing::ScratchDir dir;
  const auto finding = recordFinding(dir.path() / "findings", "nothing-here.plan");
  const auto minimal = finding / "minimal.seq";
  const auto r = testing::gpufuzz("promote " + finding.string() + " --deadline 150 --corpus " +
                                  (dir.path() / "corpus").string());
  expectInputError(r, minimal.string() + ":" + std::to_string(directiveLine(minimal, "faults")) +
                          ":11: faults: no fault plan");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "corpus")) << r.output;
}

TEST(InputCheckPromote, AMalformedPlanInTheFindingIsPlacedInThePlan) {
  testing::ScratchDir dir;
  const auto plan = dir.path() / "bad.plan";
  writeFileAtomically(plan, kBadPlan);
  const auto finding = recordFinding(dir.path() / "findings", plan.string());
  const auto r = testing::gpufuzz("promote " + finding.string() + " --deadline 150 --corpus " +
                                  (dir.path() / "corpus").string());
  expectInputError(r, plan.string() + ":1:");
}

TEST(InputCheckPromote, AMalformedMinimalSequenceIsPlaced) {
  testing::ScratchDir dir;
  const auto finding = recordFinding(dir.path() / "findings", "max-26.5.0");
  const auto minimal = finding / "minimal.seq";
  writeFileAtomically(minimal, readFile(minimal) + "frob a\n");
  const auto r = testing::gpufuzz("promote " + finding.string() + " --deadline 150 --corpus " +
                                  (dir.path() / "corpus").string());
  expectInputError(r, minimal.string() + ":");
  EXPECT_NE(r.output.find("unknown operation"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpufuzz
