// HarnessUnitTest.cpp: the harness's pieces on their own: command line, durations, deadlines,
// atomic files, findings deduplication and resume, reports, shrink candidates.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "harness/AtomicFile.h"
#include "harness/Cli.h"
#include "harness/Deadline.h"
#include "harness/Findings.h"
#include "harness/Report.h"
#include "harness/RunConfig.h"
#include "model/Generator.h"
#include "model/SequenceEdits.h"
#include "renderer/InputError.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

CommandLine parse(std::vector<std::string> args) {
  args.insert(args.begin(), "gpufuzz");
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  return parseCommandLine(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, ParsesOptionsOfTheTable) {
  const CommandLine cl = parse({"fuzz", "--policy", "context-first", "--runs=50", "--no-stacks"});
  EXPECT_EQ(cl.command, "fuzz");
  EXPECT_EQ(cl.get(Option::Policy), "context-first");
  EXPECT_EQ(cl.number(Option::Runs, 1000), 50U);
  EXPECT_TRUE(cl.has(Option::NoStacks));
  EXPECT_EQ(cl.number(Option::MaxOps, 40), 40U);
}

TEST(Cli, RejectsBadUsage) {
  EXPECT_THROW(parse({"frobnicate"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--bogus"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs"}), InputError);
  EXPECT_THROW(parse({"fuzz", "-o", "x"}), InputError);  // shrink's option
  EXPECT_THROW(parse({"replay"}), InputError);           // needs a file
  EXPECT_THROW(parse({"shrink", "a.seq", "b.seq"}), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "12x"}).number(Option::Runs, 1), InputError);
  EXPECT_THROW(parse({"fuzz", "--runs", "0"}).number(Option::Runs, 1), InputError);
}

TEST(Cli, Durations) {
  EXPECT_EQ(parseDuration("30s").count(), 30);
  EXPECT_EQ(parseDuration("10m").count(), 600);
  EXPECT_EQ(parseDuration("8h").count(), 8 * 3600);
  EXPECT_EQ(parseDuration("1h30m").count(), 5400);
  EXPECT_EQ(parseDuration("90").count(), 90);
  EXPECT_THROW(parseDuration("5y"), InputError);
  EXPECT_THROW(parseDuration(""), InputError);
  EXPECT_THROW(parseDuration("0s"), InputError);
}

TEST(RunConfig, BackendOptionsReachTheRunnerAsTheyWereGiven) {
  for (const BackendOptions& given :
       {BackendOptions{}, BackendOptions{"pocl", std::nullopt}, BackendOptions{"", false},
        BackendOptions{"NVIDIA CUDA", true}}) {
    const std::vector<std::string> args = backendOptionArgs(given);
    BackendOptions read;
    for (std::size_t i = 0; i < args.size(); ++i) {
      ASSERT_TRUE(readBackendOptionArg(
          args[i], [&] { return args.at(++i); }, read))
          << args[i];
    }
    EXPECT_EQ(read, given);
  }
  BackendOptions ignored;
  EXPECT_FALSE(readBackendOptionArg(
      "--policy", [] { return std::string("x"); }, ignored));
  EXPECT_THROW(parseValidationOption("yes"), InputError);
  EXPECT_THROW(resolveRunConfig(RunOverrides{"metal", {}, {}, {}}, Directives{}, ""), InputError);
  EXPECT_EQ(resolveRunConfig(RunOverrides{"opencl", {}, {}, {}}, Directives{}, "").backend,
            "opencl");
}

TEST(Deadline, CalibratesFromThe99thPercentileAboveAFloor) {
  DeadlineSettings s;
  s.factor = 10;
  s.floor = Millis{100};
  DeadlineCalibrator c(s);
  EXPECT_EQ(c.deadline(), Millis{100});
  for (int i = 0; i < 1000; ++i)
    c.observe("draw", std::chrono::microseconds(20'000));
  EXPECT_EQ(c.deadline(), Millis{200});
  c.observe("draw", std::chrono::microseconds(5'000'000));  // one planted delay does not move it
  EXPECT_EQ(c.deadline(), Millis{200});
  EXPECT_GE(c.confirmationDeadline(), c.deadline() * 10);
  EXPECT_EQ(parseDeadlineOption("250"), Millis{250});
  EXPECT_EQ(parseDeadlineOption("auto"), std::nullopt);
  EXPECT_THROW(parseDeadlineOption("fast"), InputError);
  s.fixed = Millis{42};
  EXPECT_EQ(DeadlineCalibrator(s).deadline(), Millis{42});
}

// A kind seen often enough gets its own deadline; a slow kind does not stretch a fast one's,
// and a kind seen rarely gets the deadline over every kind.
TEST(Deadline, EachKindSeenOftenEnoughHasItsOwnDeadline) {
  DeadlineSettings s;
  s.factor = 10;
  s.floor = Millis{100};
  s.ceiling = Millis{60'000};
  s.confirmFactor = 10;
  s.confirmFloor = Millis{1'000};
  DeadlineCalibrator c(s);
  for (int i = 0; i < 31; ++i)
    c.observe("ctx_create", std::chrono::microseconds(500'000));
  EXPECT_TRUE(c.kindDeadlines().empty()) << "31 samples are not enough for a kind";
  c.observe("ctx_create", std::chrono::microseconds(500'000));
  for (int i = 0; i < 500; ++i)
    c.observe("buf_create", std::chrono::microseconds(1'000));
  c.observe("read_back", std::chrono::microseconds(2'000));
  const auto kinds = c.kindDeadlines();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds.at("ctx_create"), Millis{5'000});
  EXPECT_EQ(kinds.at("buf_create"), Millis{100});  // 10 ms scaled, raised to the floor
  EXPECT_EQ(c.deadlineFor("buf_create"), Millis{100});
  EXPECT_EQ(c.deadlineFor("read_back"), c.deadline());  // one sample: the overall deadline
  EXPECT_EQ(c.deadline(), Millis{5'000});               // p99 over every kind: the slow creates
  EXPECT_EQ(c.kindConfirmationDeadlines().at("ctx_create"), Millis{50'000});
  EXPECT_EQ(c.kindConfirmationDeadlines().at("buf_create"), Millis{1'000});
  EXPECT_NE(c.describe().find("by kind 100..5000 ms"), std::string::npos) << c.describe();
  s.fixed = Millis{42};
  EXPECT_TRUE(DeadlineCalibrator(s).kindDeadlines().empty());
}

TEST(AtomicFile, ReplacesWholeFilesAndLeavesNoTemporaries) {
  testing::ScratchDir dir;
  const auto path = dir.path() / "sub" / "f.txt";
  writeFileAtomically(path, "one");
  writeFileAtomically(path, "two");
  EXPECT_EQ(readFile(path), "two");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    ++entries;
  EXPECT_EQ(entries, 1U);
}

Finding findingOf(const std::string& text, OutcomeClass cls, const std::string& op) {
  Finding f;
  f.minimal = parseSequence(text, "t.seq");
  f.outcome = RunOutcome{cls, At{3}, op, "detail"};
  return f;
}

TEST(Findings, DeduplicatesBySignatureAndResumes) {
  testing::ScratchDir dir;
  const Finding a = findingOf("create r0\ndestroy r0\ncreate r1\n", OutcomeClass::Hang, "create");
  // Same bug under other names: the same signature.
  const Finding a2 = findingOf("create x\ndestroy x\ncreate y\n", OutcomeClass::Hang, "create");
  const Finding b = findingOf("create r0\ndestroy r0\ncreate r1\n", OutcomeClass::Error, "create");
  {
    FindingStore store(dir.path());
    EXPECT_TRUE(store.record(a).first);
    EXPECT_FALSE(store.record(a2).first);
    EXPECT_TRUE(store.record(b).first);
    EXPECT_EQ(store.size(), 2U);
  }
  FindingStore resumed(dir.path());
  EXPECT_EQ(resumed.size(), 2U);
  const auto [isNew, folder] = resumed.record(a);
  EXPECT_FALSE(isNew);
  EXPECT_NE(readFile(folder / "finding.json").find("\"hits\": 3"), std::string::npos);
  EXPECT_EQ(parseSequence(readFile(folder / "minimal.seq"), "m.seq").ops, a.minimal.ops);
}

TEST(Report, HasTheContractsFixedFields) {
  Report r;
  r.command = "replay";
  r.seed = 1234;
  r.backend = "sim";
  r.policy = "shipped";
  r.faults = "max-26.5.0";
  r.executions = 12;
  r.results.push_back({"a.seq", RunOutcome{OutcomeClass::Hang, At{5}, "buf_create", "x"},
                       Expectation{OutcomeClass::Hang, At{5}}, true});
  const std::string json = reportJson(r);
  for (const char* field :
       {"\"command\": \"replay\"", "\"seed\": 1234", "\"backend\": \"sim\"", "\"executions\": 12",
        "\"elapsed_s\"", "\"results\"", "\"findings\"", "\"class\": \"hang\"", "\"at\": 5",
        "\"op\": \"buf_create\"", "\"met\": true"}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << " in\n" << json;
  }
}

TEST(ShrinkCandidates, RemovalTakesDependentsAndEveryCandidateIsValid) {
  const Sequence seq = parseSequence(
      "create r0\ndraw r0 triangles=9\ncreate r1\ndestroy r0\nread_back r1\n", "t.seq");
  const Sequence without = removeOperation(seq, 0);
  EXPECT_EQ(normalizedOperations(without), "create r0\nread_back r0\n");
  for (const auto& [edit, candidate] : shrinkCandidates(seq)) {
    EXPECT_TRUE(isValid(candidate)) << edit.describe(seq);
    EXPECT_NE(normalizedOperations(candidate), normalizedOperations(seq)) << edit.describe(seq);
  }
}

TEST(Generator, SameSeedSameSequenceAndAlwaysValid) {
  for (Vocabulary v : {Vocabulary::Renderer, Vocabulary::Device, Vocabulary::All}) {
    const GeneratorConfig config{v, 25};
    std::set<std::string> distinct;
    for (uint64_t seed = 0; seed < 300; ++seed) {
      const Sequence s = generateSequence(config, seed);
      EXPECT_EQ(s.ops, generateSequence(config, seed).ops);
      EXPECT_TRUE(isValid(s)) << printSequence(s);
      EXPECT_GE(s.ops.size(), 1U);
      EXPECT_LE(s.ops.size(), 25U);
      for (const Operation& op : s.ops) {
        if (v == Vocabulary::Renderer) {
          EXPECT_TRUE(isRendererOp(op.kind));
        } else if (v == Vocabulary::Device) {
          EXPECT_FALSE(isRendererOp(op.kind));
        }
      }
      distinct.insert(printSequence(s));
    }
    EXPECT_GT(distinct.size(), 250U);
  }
}

TEST(Generator, ProducesTheLifecycleShapesBugsNeed) {
  // Over a few hundred sequences: renderers dropped with queued work, new renderers after a drop,
  // texture replacement between draws, and three or more contexts.
  int droppedWithWork = 0, createAfterDrop = 0, replacedBetweenDraws = 0, threeContexts = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const Sequence s = generateSequence(GeneratorConfig{}, seed);
    std::map<std::string, bool> queued;
    bool dropped = false, drewBefore = false, sawCreateAfterDrop = false, sawReplace = false;
    int creates = 0;
    for (const Operation& op : s.ops) {
      const std::string& r = op.names[0];
      if (op.kind == OpKind::Create) {
        ++creates;
        sawCreateAfterDrop = sawCreateAfterDrop || dropped;
      }
      if (op.kind == OpKind::Draw) {
        queued[r] = true;
        drewBefore = true;
      }
      if (op.kind == OpKind::Sync || op.kind == OpKind::ReadBack) queued[r] = false;
      if (op.kind == OpKind::SetTextures && drewBefore) sawReplace = true;
      if (op.kind == OpKind::Destroy) {
        droppedWithWork += queued[r] ? 1 : 0;
        dropped = true;
      }
    }
    createAfterDrop += sawCreateAfterDrop ? 1 : 0;
    replacedBetweenDraws += sawReplace ? 1 : 0;
    threeContexts += creates >= 3 ? 1 : 0;
  }
  EXPECT_GT(droppedWithWork, 100);
  EXPECT_GT(createAfterDrop, 100);
  EXPECT_GT(replacedBetweenDraws, 100);
  EXPECT_GT(threeContexts, 100);
}

}  // namespace
}  // namespace gpufuzz
