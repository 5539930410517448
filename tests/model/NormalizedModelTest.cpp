// NormalizedModelTest.cpp: a model's normalized facts (docs/models.md, "Normalized facts"): the
// exact text of a small model with every kind of fact, facts that follow from the model and not
// from its layout, and every built-in model read back through the C++ client library's reader
// with every field equal to the parsed model's.
#include "model/NormalizedModel.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpufuzz/target.hpp"
#include "model/LifecycleModel.h"

namespace gpufuzz {
namespace {

namespace gt = gpufuzz::target;

// Every kind of line: a note, an owner declared before its owner kind, a list slot, integer and
// word arguments, fails, both effects, a weight, and kinds with and without a default release.
constexpr std::string_view kSmall =
    "# gpufuzz model\n"
    "model small\n"
    "note Buffers of pools, on streams.\n"
    "resource buf    prefix b  owner pool\n"
    "resource pool   prefix p\n"
    "resource stream prefix st\n"
    "op pool_create  -> pool  flags=0 (0..7)  weight:2  fails:host-oom|oom\n"
    "op pool_destroy pool!\n"
    "op stream_create -> stream  priority=normal {low|normal|high}\n"
    "op alloc pool stream -> buf  bytes=256 (1..18446744073709551615)  +pending(stream)\n"
    "op free buf! stream\n"
    "op wait stream buf*  -pending(stream)\n"
    "release buf stream pool\n";

constexpr std::string_view kSmallFacts =
    "gpufuzz-model-facts 1\n"
    "model small HASH\n"
    "note Buffers of pools, on streams.\n"
    "resource buf b\n"
    "resource pool p\n"
    "resource stream st\n"
    "owner buf pool\n"
    "op pool_create\n"
    "weight pool_create 2\n"
    "slot pool_create pool new\n"
    "arg pool_create flags int 0 0 7\n"
    "fails pool_create oom host-oom\n"
    "op pool_destroy\n"
    "weight pool_destroy 1\n"
    "slot pool_destroy pool end\n"
    "op stream_create\n"
    "weight stream_create 1\n"
    "slot stream_create stream new\n"
    "arg stream_create priority word normal low normal high\n"
    "op alloc\n"
    "weight alloc 1\n"
    "slot alloc pool use\n"
    "slot alloc stream use\n"
    "slot alloc buf new\n"
    "arg alloc bytes int 256 1 18446744073709551615\n"
    "effect alloc set pending stream\n"
    "op free\n"
    "weight free 1\n"
    "slot free buf end\n"
    "slot free stream use\n"
    "op wait\n"
    "weight wait 1\n"
    "slot wait stream use\n"
    "slot wait buf list\n"
    "effect wait clear pending stream\n"
    "release buf\n"
    "release stream\n"
    "release pool pool_destroy\n";

std::string withHash(std::string_view facts, const std::string& hash) {
  std::string out(facts);
  out.replace(out.find("HASH"), 4, hash);
  return out;
}

TEST(NormalizedModel, EveryKindOfFactOfASmallModel) {
  const LifecycleModel m = parseModel(kSmall, "small.model");
  EXPECT_EQ(normalizedModel(m), withHash(kSmallFacts, m.hash));
}

TEST(NormalizedModel, TheFactsFollowTheModelNotItsLayout) {
  const LifecycleModel m = parseModel(kSmall, "small.model");
  std::string spaced(kSmall);
  spaced.replace(spaced.find("op free buf! stream"), 19, "op   free   buf!   stream  # ends b");
  const LifecycleModel other = parseModel("# another layout\n" + spaced, "elsewhere.model");
  ASSERT_NE(other.hash, m.hash);
  EXPECT_EQ(normalizedModel(other), withHash(kSmallFacts, other.hash));
}

TEST(NormalizedModel, TheFactsOfAModelFileLieBesideIt) {
  EXPECT_EQ(modelFactsPath("/w/models/all-0123.model"), "/w/models/all-0123.facts");
  EXPECT_EQ(modelFactsPath("./mine.model"), "./mine.facts");
  EXPECT_EQ(modelFactsPath("dir/mine"), "dir/mine.facts");
}

/// Every field the client library reads equals the parsed model's.
void expectSame(const LifecycleModel& m, const gt::Model& c) {
  EXPECT_EQ(c.name, m.name);
  EXPECT_EQ(c.hash, m.hash);
  EXPECT_EQ(c.note, m.note);
  ASSERT_EQ(c.resources.size(), m.resources.size());
  for (std::size_t k = 0; k < m.resources.size(); ++k) {
    const ResourceDecl& r = m.resources[k];
    SCOPED_TRACE(r.kind);
    EXPECT_EQ(c.resources[k].kind, r.kind);
    EXPECT_EQ(c.resources[k].prefix, r.prefix);
    EXPECT_EQ(c.resources[k].owner, r.owner ? m.resources[*r.owner].kind : "");
    const OpDecl* release = m.defaultRelease(k);
    const gt::OperationSpec* clientRelease = c.releaseOperation(r.kind);
    EXPECT_EQ(clientRelease ? clientRelease->name : "", release ? release->name : "");
  }
  std::vector<std::string> release;
  for (const std::size_t k : m.release)
    release.push_back(m.resources[k].kind);
  EXPECT_EQ(c.release, release);
  ASSERT_EQ(c.ops.size(), m.ops.size());
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    const OpDecl& o = m.ops[i];
    const gt::OperationSpec& s = c.ops[i];
    SCOPED_TRACE(o.name);
    EXPECT_EQ(s.name, o.name);
    EXPECT_EQ(s.weight, o.weight);
    std::vector<std::string> used, introduced;
    std::vector<std::string> clientUsed;
    for (const SlotDecl& slot : o.slots) {
      const std::string& kind = m.resources[slot.kind].kind;
      if (slot.use == SlotUse::Introduce) {
        introduced.push_back(kind);
      } else {
        used.push_back(kind + (slot.use == SlotUse::End    ? "!"
                               : slot.use == SlotUse::List ? "*"
                                                           : ""));
      }
    }
    for (const gt::Slot& slot : s.slots) {
      clientUsed.push_back(slot.kind + (slot.mode == gt::Slot::Mode::End    ? "!"
                                        : slot.mode == gt::Slot::Mode::List ? "*"
                                                                            : ""));
    }
    EXPECT_EQ(clientUsed, used);
    EXPECT_EQ(s.introduces, introduced);
    ASSERT_EQ(s.args.size(), o.args.size());
    for (std::size_t a = 0; a < o.args.size(); ++a) {
      const ArgDecl& want = o.args[a];
      const gt::Argument& got = s.args[a];
      EXPECT_EQ(got.key, want.key);
      EXPECT_EQ(got.words, want.words) << want.key;
      EXPECT_EQ(got.defaultValue, want.defaultValue) << want.key;
      EXPECT_EQ(got.max, want.max) << want.key;
      if (!want.isWord()) {
        EXPECT_EQ(got.min, want.min) << want.key;
      } else {
        EXPECT_EQ(got.defaultWord, want.words[want.defaultValue]) << want.key;
      }
    }
    std::string fails;
    for (const std::string& w : s.fails)
      fails += (fails.empty() ? "" : "|") + w;
    EXPECT_EQ(fails, o.fails.text());
    ASSERT_EQ(s.flags.size(), o.effects.size());
    for (std::size_t e = 0; e < o.effects.size(); ++e) {
      const EffectDecl& want = o.effects[e];
      EXPECT_EQ(s.flags[e].set, want.set);
      EXPECT_EQ(s.flags[e].name, m.resources[want.kind].flags[want.flag]);
      EXPECT_EQ(s.flags[e].kind, m.resources[want.kind].kind);
    }
  }
}

TEST(NormalizedModel, EveryBuiltinModelRoundTripsThroughTheClientReader) {
  for (const std::string& name : builtinModelNames()) {
    SCOPED_TRACE(name);
    const LifecycleModel& m = builtinModel(name);
    const std::string facts = normalizedModel(m);
    expectSame(m, gt::parseModelFacts(facts, name + ".facts"));
  }
  const LifecycleModel small = parseModel(kSmall, "small.model");
  expectSame(small, gt::parseModelFacts(normalizedModel(small), "small.facts"));
}

TEST(NormalizedModel, TheClientsBuiltinModelIsTheFactsOfAll) {
  EXPECT_EQ(std::string(gt::kBuiltinModel), normalizedModel(builtinModel("all")))
      << "write gpufuzz model normalize all into kBuiltinModel of clients/cpp/gpufuzz/target.hpp";
}

}  // namespace
}  // namespace gpufuzz
