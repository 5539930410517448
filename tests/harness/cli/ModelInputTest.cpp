// ModelInputTest.cpp: a bad lifecycle model, and a sequence that breaks its model, are refused
// with their place and exit 2 by every subcommand that reads them (model check, fuzz, replay,
// shrink, explain), before any child runs; `model show`, `model check` and `model normalize` of
// good models pass, the last printing the facts the model library writes.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/base/AtomicFile.h"
#include "model/LifecycleModel.h"
#include "model/NormalizedModel.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

/// A good model of three kinds, an owner and a flag.
constexpr const char* kGoodModel =
    "# gpufuzz model\n"
    "model pools\n"
    "resource pool prefix p\n"
    "resource stream prefix s\n"
    "resource buf prefix b owner pool\n"
    "op pool_create -> pool\n"
    "op pool_destroy pool!\n"
    "op stream_create -> stream\n"
    "op alloc pool stream -> buf bytes=256 (1..4096)\n"
    "op launch stream buf +pending(stream)\n"
    "op free buf!\n"
    "release buf stream pool\n";

struct BadModel {
  const char* what;
  std::string text;
  std::string place;  // ":LINE:COLUMN:"
};

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

std::vector<BadModel> badModels() {
  const std::string good = kGoodModel;
  return {
      {"unknown word", replaced(good, "op free buf!", "opp free buf!"), ":11:1:"},
      {"undeclared slot kind", replaced(good, "op launch stream buf", "op launch strem buf"),
       ":10:11:"},
      {"default out of bounds", replaced(good, "bytes=256 (1..4096)", "bytes=9999 (1..4096)"),
       ":9:35:"},
      {"reserved name", replaced(good, "model pools", "model renderer"), ":2:7:"},
      {"owner cycle", replaced(good, "resource pool prefix p", "resource pool prefix p owner buf"),
       ":3:30:"},
      {"kind missing from release", replaced(good, "release buf stream pool", "release buf pool"),
       ":12:1:"},
  };
}

class ModelInput : public ::testing::Test {
 protected:
  testing::ScratchDir dir;
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = (dir.path() / name).string();
    writeFileAtomically(p, text);
    return p;
  }
};

void expectRefused(const testing::CommandResult& r, const std::string& place,
                   const std::string& what) {
  EXPECT_EQ(r.status, 2) << what << "\n" << r.output;
  EXPECT_NE(r.output.find(place), std::string::npos)
      << what << ": expected the place " << place << "\n"
      << r.output;
  EXPECT_EQ(r.output.find("harness failed"), std::string::npos) << r.output;
}

TEST_F(ModelInput, EveryReaderRefusesABadModelWithItsPlace) {
  for (const BadModel& bad : badModels()) {
    const std::string model = write("bad.model", bad.text);
    const std::string seq = write("uses-bad.seq", "# model: ./bad.model\npool_create p0\n");
    const std::string place = model + bad.place;
    expectRefused(testing::gpufuzz("model check " + model), place, bad.what);
    expectRefused(testing::gpufuzz("model normalize " + model), place, bad.what);
    expectRefused(testing::gpufuzz("fuzz --model " + model + " --runs 1 --out " +
                                   (dir.path() / "out").string()),
                  place, bad.what);
    for (const char* command : {"replay", "shrink", "explain"}) {
      expectRefused(testing::gpufuzz(std::string(command) + " " + seq), place, bad.what);
      expectRefused(testing::gpufuzz(std::string(command) + " --model " + model + " " + seq), place,
                    bad.what);
    }
  }
}

TEST_F(ModelInput, ASequenceThatBreaksItsModelIsPlaced) {
  write("pools.model", kGoodModel);
  const std::string head = "# model: ./pools.model\npool_create p0\nstream_create s0\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + "frob p0\n", ":4:1: unknown operation 'frob' in model pools"},
      {head + "alloc s0 p0 b0\n", ":4:7: s0 is a stream, alloc needs a pool"},
      {head + "pool_destroy p0\npool_destroy p0\n", ":5:14: p0 is not alive"},
      {head + "alloc p0 s0 b0 bytes=5000\n", ":4:22: bytes=5000 is out of bounds"},
      {"# model: ./absent.model\npool_create p0\n", ":1:10:"},
  };
  for (const auto& [text, place] : cases) {
    const std::string seq = write("broken.seq", text);
    for (const char* command : {"replay", "shrink", "explain"}) {
      expectRefused(testing::gpufuzz(std::string(command) + " " + seq), seq + place, text);
    }
  }
}

TEST_F(ModelInput, AModelTheRunnerDoesNotImplementNeedsATarget) {
  const std::string model = write("pools.model", kGoodModel);
  const auto r = testing::gpufuzz("fuzz --backend sim --model " + model + " --runs 1 --out " +
                                  (dir.path() / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("model pools"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--target"), std::string::npos) << r.output;
}

TEST_F(ModelInput, OpsAndModelTogetherAreRefused) {
  const auto r = testing::gpufuzz("fuzz --ops renderer --model device --runs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--ops"), std::string::npos) << r.output;
}

TEST_F(ModelInput, ModelShowPrintsEachBuiltInModelThatModelCheckAccepts) {
  for (const char* name : {"renderer", "device", "all"}) {
    const auto shown = testing::gpufuzz(std::string("model show ") + name);
    ASSERT_EQ(shown.status, 0) << shown.output;
    EXPECT_NE(shown.output.find(std::string("model ") + name + "\n"), std::string::npos);
    const auto checked = testing::gpufuzz(std::string("model check ") + name);
    EXPECT_EQ(checked.status, 0) << checked.output;
  }
  const auto unknown = testing::gpufuzz("model show nothing-such");
  EXPECT_EQ(unknown.status, 2) << unknown.output;
  const auto action = testing::gpufuzz("model frob renderer");
  EXPECT_EQ(action.status, 2) << action.output;
}

TEST_F(ModelInput, ModelNormalizePrintsTheFactsOfABuiltInModelOrAFile) {
  for (const std::string& name : builtinModelNames()) {
    const auto r = testing::gpufuzz("model normalize " + name);
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_EQ(r.output, normalizedModel(builtinModel(name))) << name;
  }
  const std::string model = write("pools.model", kGoodModel);
  const auto r = testing::gpufuzz("model normalize " + model);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, normalizedModel(parseModel(kGoodModel, model)))
      << "the facts only, with no warning of the kind without release";
  EXPECT_EQ(testing::gpufuzz("model normalize nothing-such").status, 2);
}

TEST_F(ModelInput, ModelCheckPrintsTheVocabularyAndWarnsOfAKindWithoutRelease) {
  const std::string model = write("pools.model", kGoodModel);
  const auto r = testing::gpufuzz("model check " + model);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("op alloc P S B [bytes=1..4096]"), std::string::npos) << r.output;
  // stream has no ending operation: a target must release it, or the process's exit does.
  EXPECT_NE(r.output.find(model + ":4:1: warning: a leftover stream"), std::string::npos)
      << r.output;
}

TEST_F(ModelInput, ARuntimeModelRunsOnlyOnTheBackendsThatExecuteIt) {
  const std::string out = " --runs 1 --out " + (dir.path() / "out").string();
  for (const auto& [model, backend, runsOn] :
       std::vector<std::array<std::string, 3>>{{"vulkan", "sim", "vulkan"},
                                               {"cuda-driver", "opencl", "cuda, cuda-async"},
                                               {"opencl", "vulkan", "opencl"},
                                               // Said before cuda's driver is looked for.
                                               {"vulkan", "cuda", "vulkan"}}) {
    const auto r = testing::gpufuzz("fuzz --backend " + backend + " --model " + model + out);
    EXPECT_EQ(r.status, 2) << model << " on " << backend << "\n" << r.output;
    EXPECT_NE(r.output.find("model " + model + " is not executed by backend " + backend +
                            ": it runs on " + runsOn),
              std::string::npos)
        << r.output;
  }
  // A file's # model: is checked the same way, before anything runs.
  const std::string seq = write("one.seq", "# model: opencl\ncreate_context c0\n");
  const auto replayed = testing::gpufuzz("replay --backend sim " + seq);
  EXPECT_EQ(replayed.status, 2) << replayed.output;
  EXPECT_NE(replayed.output.find("model opencl is not executed by backend sim"), std::string::npos)
      << replayed.output;
}

TEST_F(ModelInput, FaultPlansAreRefusedForRuntimeModels) {
  const auto r = testing::gpufuzz("fuzz --model opencl --faults max-26.5.0 --runs 1 --out " +
                                  (dir.path() / "out").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--faults max-26.5.0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model opencl runs with --faults none"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "nothing ran";
}

TEST_F(ModelInput, AutoPicksTheBackendThatExecutesTheModel) {
  // pocl is part of the packages make test needs: the opencl model runs there with no --backend.
  const auto r = testing::gpufuzz(
      "fuzz --model opencl --device pocl --runs 2 --seed 1 --jobs 1 "
      "--out " +
      (dir.path() / "out").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("backend opencl ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 sequences: pass=2"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace gpufuzz
