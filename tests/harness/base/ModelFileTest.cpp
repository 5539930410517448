// ModelFileTest.cpp: the model files the harness writes for children and findings, each with its
// normalized facts beside it, so that a target reads the facts whether it is given their path or
// only the model file's.
#include "harness/base/ModelFile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "harness/base/AtomicFile.h"
#include "model/NormalizedModel.h"
#include "tests/ScratchDir.h"

namespace gpufuzz {
namespace {

const LifecycleModel& pools() {
  static const LifecycleModel& m = internModel(parseModel(
      "model pools\nresource pool prefix p\nop pool_create -> pool\nop pool_destroy pool!\n"
      "release pool\n",
      "pools.model"));
  return m;
}

TEST(ModelFile, AChildsModelFileHasItsFactsBesideIt) {
  testing::ScratchDir dir;
  for (const LifecycleModel* m : {&pools(), &builtinModel("renderer")}) {
    const std::filesystem::path file = modelFileIn(dir.path(), *m);
    EXPECT_EQ(file, std::filesystem::absolute(dir.path() / "models" /
                                              (m->name + "-" + m->hash + ".model")));
    EXPECT_EQ(readFile(file), m->text);
    const std::filesystem::path facts = modelFactsFileIn(dir.path(), *m);
    EXPECT_EQ(facts, file.parent_path() / (m->name + "-" + m->hash + ".facts"));
    EXPECT_EQ(readFile(facts), normalizedModel(*m));
  }
}

TEST(ModelFile, AFindingsModelFileHasItsFactsBesideIt) {
  testing::ScratchDir dir;
  Sequence seq;
  seq.model = &pools();
  const Sequence portable = withPortableModel(seq, dir.path() / "finding");
  EXPECT_EQ(portable.directives.model, "./pools.model");
  EXPECT_EQ(readFile(dir.path() / "finding" / "pools.model"), pools().text);
  EXPECT_EQ(readFile(dir.path() / "finding" / "pools.facts"), normalizedModel(pools()));
}

}  // namespace
}  // namespace gpufuzz
