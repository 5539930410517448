// ComputeSanitizerTest.cpp: compute-sanitizer's text reports read into outcomes, on reports
// written after NVIDIA's documented formats (sanitizer-reports/), and a child supervised under a
// stand-in compute-sanitizer with the real one's command line.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "base/InputError.h"
#include "harness/supervise/ComputeSanitizer.h"
#include "tests/ProjectPaths.h"
#include "tests/harness/supervise/FakeRunnerPath.h"

namespace gpufuzz {
namespace {

const std::filesystem::path kReports =
    testing::sourceDir() / "tests/harness/supervise/sanitizer-reports";

std::string report(const std::string& name) {
  std::ifstream in(kReports / name);
  EXPECT_TRUE(in) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Supervised passed() {
  Supervised s;
  s.exitCode = kSanitizerErrorExit;
  s.harnessError = "unexpected exit status 86";
  return s;
}

TEST(ComputeSanitizer, OptionNamesEveryToolAndRejectsOthers) {
  for (const char* name : {"none", "memcheck", "racecheck", "synccheck", "initcheck"}) {
    EXPECT_EQ(sanitizerToolName(parseSanitizerOption(name)), name);
  }
  EXPECT_THROW(parseSanitizerOption("asan"), InputError);
  EXPECT_THROW(parseSanitizerOption(""), InputError);
}

TEST(ComputeSanitizer, CommandLineWrapsTheRunner) {
  const ChildCommand wrapped = underSanitizer(ChildCommand{"/bin/runner", {"--backend", "cuda"}},
                                              SanitizerTool::Memcheck, "/cs", "/tmp/x.log");
  EXPECT_EQ(wrapped.executable, "/cs");
  EXPECT_EQ(wrapped.args,
            (std::vector<std::string>{"--tool", "memcheck", "--leak-check", "full",
                                      "--error-exitcode", "86", "--log-file", "/tmp/x.log",
                                      "--print-limit", "100", "/bin/runner", "--backend", "cuda"}));
  const ChildCommand race =
      underSanitizer(ChildCommand{"/bin/runner", {}}, SanitizerTool::Racecheck, "/cs", "/l");
  EXPECT_EQ(race.args[1], "racecheck");
  EXPECT_EQ(std::count(race.args.begin(), race.args.end(), "--leak-check"), 0);
}

TEST(ComputeSanitizer, InvalidAccessIsInvalidWithTheFirstError) {
  const SanitizerReport r = parseSanitizerLog(report("memcheck-invalid-write.txt"));
  ASSERT_EQ(r.records.size(), 2U);
  EXPECT_EQ(r.records[0].headline, "Invalid __global__ write of size 4 bytes");
  EXPECT_NE(r.records[0].text.find("Address 0x7f3c1e000400 is out of bounds"), std::string::npos);
  EXPECT_EQ(r.records[0].text.find("0x7f3c1e000404"), std::string::npos) << "records run together";
  EXPECT_EQ(r.errorSummary, 2U);
  Supervised s = passed();
  applySanitizerReport(r, OpPlace{At{3}, "destroy"}, s);
  EXPECT_FALSE(s.harnessError);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Invalid);
  EXPECT_EQ(s.outcome.at, At{At::kEnd});
  EXPECT_EQ(s.outcome.detail, "compute-sanitizer: Invalid __global__ write of size 4 bytes");
}

TEST(ComputeSanitizer, ApiMisuseKeepsTheRunnersPlace) {
  const SanitizerReport r = parseSanitizerLog(report("memcheck-api-error.txt"));
  ASSERT_EQ(r.records.size(), 1U);
  EXPECT_EQ(r.records[0].kind, SanitizerRecord::Kind::Error);
  Supervised s = passed();
  s.outcome = RunOutcome{OutcomeClass::Error, At{4}, "buf_destroy", "cuMemFree: ...", {}};
  applySanitizerReport(r, OpPlace{At{3}, "ctx_destroy"}, s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Invalid);
  EXPECT_EQ(s.outcome.at, At{4});
  EXPECT_NE(s.outcome.detail.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos);
}

TEST(ComputeSanitizer, LeaksTheRunnerSawAtItsEndAreLeaks) {
  const SanitizerReport r = parseSanitizerLog(report("memcheck-leak.txt"));
  ASSERT_EQ(r.records.size(), 2U);
  EXPECT_TRUE(r.hasLeaks());
  EXPECT_FALSE(r.hasErrors());
  Supervised s = passed();
  s.outcome = RunOutcome{OutcomeClass::Leak, std::nullopt, "", "1 buffer", {}};
  applySanitizerReport(r, OpPlace{At{2}, "ctx_destroy"}, s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Leak);
  EXPECT_FALSE(s.outcome.at);
  EXPECT_NE(s.outcome.detail.find("Leaked 1048576 bytes"), std::string::npos);
}

TEST(ComputeSanitizer, LeaksTheRunnerDidNotSeeWereAliveAtADestroy) {
  const SanitizerReport r = parseSanitizerLog(report("memcheck-leak.txt"));
  Supervised s = passed();
  applySanitizerReport(r, OpPlace{At{2}, "ctx_destroy"}, s);
  EXPECT_EQ(s.outcome.cls, OutcomeClass::Invalid);
  EXPECT_EQ(s.outcome.at, At{2});
  EXPECT_EQ(s.outcome.op, "ctx_destroy");
  EXPECT_FALSE(s.harnessError);
}

TEST(ComputeSanitizer, RacesAndUninitializedReadsAreInvalid) {
  for (const char* name : {"racecheck-hazard.txt", "initcheck-uninitialized.txt"}) {
    const SanitizerReport r = parseSanitizerLog(report(name));
    ASSERT_EQ(r.records.size(), 1U) << name;
    Supervised s = passed();
    applySanitizerReport(r, std::nullopt, s);
    EXPECT_EQ(s.outcome.cls, OutcomeClass::Invalid) << name;
  }
}

TEST(ComputeSanitizer, ACleanReportChangesNothingAndAnErrorStatusWithoutOneIsTheHarnesss) {
  const SanitizerReport r = parseSanitizerLog(report("clean.txt"));
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.errorSummary, 0U);
  Supervised clean;
  clean.exitCode = 0;
  applySanitizerReport(r, std::nullopt, clean);
  EXPECT_EQ(clean.outcome.cls, OutcomeClass::Pass);
  EXPECT_FALSE(clean.harnessError);
  Supervised odd = passed();
  applySanitizerReport(r, std::nullopt, odd);
  ASSERT_TRUE(odd.harnessError);
  EXPECT_NE(odd.harnessError->find("names no error"), std::string::npos);
}

TEST(ComputeSanitizer, ProgramOutputBetweenRecordsIsNotPartOfThem) {
  const SanitizerReport r = parseSanitizerLog(
      "========= Leaked 4 bytes at 0x10\nrunner: done\n=========     Host Frame: x\n");
  ASSERT_EQ(r.records.size(), 1U);
  EXPECT_EQ(r.records[0].text, "Leaked 4 bytes at 0x10");
}

using testing::kFakeRunner;
const std::string kFakeSanitizer =
    (testing::sourceDir() / "tests/harness/supervise/fake-compute-sanitizer").string();

Supervised underFake(const std::string& sample, std::vector<std::string> runnerArgs,
                     const std::filesystem::path& log) {
  SupervisionLimits limits;
  limits.forkServer = true;  // must be ignored: a fork server's children escape the sanitizer
  limits.progressDeadline = std::chrono::milliseconds{2'000};
  limits.startDeadline = std::chrono::milliseconds{10'000};
  limits.captureStacks = false;
  limits.environment = {{"GPUFUZZ_FAKE_SANITIZER_REPORT", (kReports / sample).string()}};
  return superviseUnderSanitizer(ChildCommand{kFakeRunner, std::move(runnerArgs)}, limits,
                                 SanitizerSetup{SanitizerTool::Memcheck, kFakeSanitizer}, log,
                                 OpPlace{At{2}, "ctx_destroy"});
}

TEST(ComputeSanitizer, AChildUnderTheSanitizerReportsThroughIt) {
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("sanitizer-test-" + std::to_string(::getpid()));
  const Supervised leak = underFake("memcheck-leak.txt", {"--ops", "3"}, log);
  EXPECT_FALSE(leak.harnessError) << *leak.harnessError << "\n" << leak.outputTail;
  EXPECT_EQ(leak.exitCode, kSanitizerErrorExit);
  EXPECT_EQ(leak.outcome.cls, OutcomeClass::Invalid) << leak.outputTail;
  EXPECT_EQ(leak.outcome.at, At{2});
  EXPECT_NE(leak.outputTail.find("--- compute-sanitizer memcheck report ---"), std::string::npos);
  EXPECT_NE(leak.outputTail.find("LEAK SUMMARY"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(log)) << "the log is left behind";

  const Supervised clean = underFake("clean.txt", {"--ops", "3"}, log);
  EXPECT_FALSE(clean.harnessError) << *clean.harnessError;
  EXPECT_EQ(clean.outcome.cls, OutcomeClass::Pass);
  EXPECT_EQ(clean.timings.size(), 3U) << "the runner's events did not pass through";
}

TEST(ComputeSanitizer, AProgramThatCrashesUnderItIsACrashAtItsOperation) {
  // compute-sanitizer 2025.3 exits with the signal's number when one ends the program, and its
  // report (recorded on an H200 at a SIGSEGV in the driver) names no error of the program's.
  const SanitizerReport r = parseSanitizerLog(report("memcheck-crashed.txt"));
  EXPECT_EQ(r.errorSummary, 0U);
  EXPECT_FALSE(r.hasErrors());
  const std::filesystem::path log =
      std::filesystem::temp_directory_path() / ("sanitizer-crash-" + std::to_string(::getpid()));
  const Supervised crashed =
      underFake("memcheck-crashed.txt", {"--ops", "3", "--segv-at", "2"}, log);
  EXPECT_FALSE(crashed.harnessError) << *crashed.harnessError << "\n" << crashed.outputTail;
  EXPECT_EQ(crashed.exitCode, SIGSEGV);
  EXPECT_EQ(crashed.outcome.cls, OutcomeClass::Crash) << crashed.outputTail;
  EXPECT_EQ(crashed.outcome.at, At{2});
  EXPECT_NE(crashed.outcome.detail.find("SIGSEGV"), std::string::npos) << crashed.outcome.detail;
  EXPECT_NE(crashed.outputTail.find("didn't terminate successfully"), std::string::npos);

  // The runner's own exit statuses (2: bad input) stay the harness's, under the sanitizer too.
  const Supervised rejected =
      underFake("clean.txt", {"--ops", "3", "--exit", "2", "--no-outcome"}, log);
  ASSERT_TRUE(rejected.harnessError) << outcomeText(rejected.outcome);
  EXPECT_NE(rejected.harnessError->find("exit status 2"), std::string::npos)
      << *rejected.harnessError;
}

}  // namespace
}  // namespace gpufuzz
