// LifecycleCountersTests.cpp: the seam's counter snapshots for hand-written call sequences, checked
// counter by counter against the meanings in the fault-plan contract.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/faults/CallScript.h"

namespace gpufuzz::test {
namespace {

/// One call, and the snapshot it must be offered: "name=value ..." with every counter not named
/// expected to be 0, so a checked step pins all fourteen. An empty expectation is not checked.
struct Step {
  std::string_view call;
  std::string_view expect;
};

struct Sequence {
  std::string_view name;
  std::vector<Step> steps;
};

CounterSnapshot snapshotOf(std::string_view expect) {
  CounterSnapshot s;
  std::istringstream in{std::string(expect)};
  for (std::string item; in >> item;) {
    const std::size_t eq = item.find('=');
    const auto counter = parseCounter(item.substr(0, eq));
    if (eq == std::string::npos || !counter) throw std::invalid_argument("bad expectation " + item);
    s[*counter] = std::stoull(item.substr(eq + 1));
  }
  return s;
}

const std::vector<Sequence> kSequences = {
    {"seed: context destroyed before its buffers, then a new context allocates",
     {
         {"create A", "ctx_index=0"},
         {"alloc A x", "ctx_index=0 live_contexts=1"},
         {"destroy A", "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1"},
         {"create B",
          "ctx_index=1 live_buffers=1 orphaned_buffers=1 ctx_destroyed_with_live_buffers=1 "
          "calls=1"},
         {"alloc B y",
          "ctx_index=1 live_contexts=1 live_buffers=1 orphaned_buffers=1 "
          "ctx_destroyed_with_live_buffers=1 calls=1"},
         // The orphan's owner is the destroyed context, which still owns it until it is freed.
         {"free x",
          "ctx_index=0 live_contexts=1 live_buffers=2 ctx_buffers=1 orphaned_buffers=1 "
          "ctx_destroyed_with_live_buffers=1"},
         {"alloc B z",
          "ctx_index=1 live_contexts=1 live_buffers=1 ctx_buffers=1 "
          "ctx_destroyed_with_live_buffers=1 calls=2 ctx_calls=1"},
     }},
    {"buffers released before their context, twice",
     {
         {"create A", ""},
         {"alloc A x", ""},
         {"free x", "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1"},
         {"destroy A", "ctx_index=0 live_contexts=1"},
         {"create B", "ctx_index=1 calls=1"},
         {"alloc B y", "ctx_index=1 live_contexts=1 calls=1"},
     }},
    {"pending work and refs, drained by copy_to_host",
     {
         {"create A", ""},
         {"alloc A fb", ""},
         {"alloc A vb",
          "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1 calls=1 ctx_calls=1"},
         {"upload A vb", "ctx_index=0 live_contexts=1 live_buffers=2 ctx_buffers=2"},
         {"launch A fb vb", "ctx_index=0 live_contexts=1 live_buffers=2 ctx_buffers=2 pending=1"},
         // Both the upload and the launch still use vb.
         {"free vb",
          "ctx_index=0 live_contexts=1 live_buffers=2 ctx_buffers=2 pending=2 launches=1 refs=2"},
         {"download A fb",
          "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1 pending=2 "
          "freed_with_pending=1 launches=1"},
         {"free fb",
          "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1 freed_with_pending=1 "
          "launches=1 copies_to_host=1 calls=1 ctx_calls=1"},
         {"destroy A",
          "ctx_index=0 live_contexts=1 freed_with_pending=1 launches=1 copies_to_host=1"},
     }},
    {"drew, never read back, dropped; then a second and a third context",
     {
         {"create A", ""},
         {"alloc A fb", ""},
         {"launch A fb fb", "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1"},
         // One command that names fb twice is one reference.
         {"free fb",
          "ctx_index=0 live_contexts=1 live_buffers=1 ctx_buffers=1 pending=1 launches=1 refs=1"},
         {"destroy A", "ctx_index=0 live_contexts=1 pending=1 freed_with_pending=1 launches=1"},
         {"create B",
          "ctx_index=1 ctx_destroyed_with_pending=1 freed_with_pending=1 launches=1 calls=1"},
         {"alloc B x",
          "ctx_index=1 live_contexts=1 ctx_destroyed_with_pending=1 freed_with_pending=1 "
          "launches=1 calls=1"},
         {"free x", ""},
         {"destroy B", ""},
         {"create C",
          "ctx_index=2 ctx_destroyed_with_pending=1 freed_with_pending=1 launches=1 calls=2"},
         {"alloc C y",
          "ctx_index=2 live_contexts=1 ctx_destroyed_with_pending=1 freed_with_pending=1 "
          "launches=1 calls=2"},
     }},
    {"two live contexts: refs across contexts, textures, sync, destroy with live and pending",
     {
         {"create A", ""},
         {"create B", "ctx_index=1 live_contexts=1 calls=1"},
         {"alloc A t", ""},
         {"alloc B fb", ""},
         {"alloc B vb", ""},
         {"launch B fb vb t", "ctx_index=1 live_contexts=2 live_buffers=3 ctx_buffers=2"},
         // t belongs to A, whose queue is empty; B's launch samples it.
         {"free t", "ctx_index=0 live_contexts=2 live_buffers=3 ctx_buffers=1 launches=1 refs=1"},
         {"sync B",
          "ctx_index=1 live_contexts=2 live_buffers=2 ctx_buffers=2 pending=1 freed_with_pending=1 "
          "launches=1"},
         {"upload B vb",
          "ctx_index=1 live_contexts=2 live_buffers=2 ctx_buffers=2 freed_with_pending=1 "
          "launches=1"},
         {"destroy B",
          "ctx_index=1 live_contexts=2 live_buffers=2 ctx_buffers=2 pending=1 freed_with_pending=1 "
          "launches=1"},
         {"sync A",
          "ctx_index=0 live_contexts=1 live_buffers=2 orphaned_buffers=2 "
          "ctx_destroyed_with_live_buffers=1 ctx_destroyed_with_pending=1 freed_with_pending=1 "
          "launches=1 calls=1"},
         // Destroying B waited for its queue: the orphan has nothing pending.
         {"free vb",
          "ctx_index=1 live_contexts=1 live_buffers=2 ctx_buffers=2 orphaned_buffers=2 "
          "ctx_destroyed_with_live_buffers=1 ctx_destroyed_with_pending=1 freed_with_pending=1 "
          "launches=1 calls=1"},
     }},
    {"calls and ctx_calls count per point, process-wide and per context",
     {
         {"create A", "ctx_index=0"},
         {"create B", "ctx_index=1 live_contexts=1 calls=1"},
         {"alloc A a1", "ctx_index=0 live_contexts=2"},
         {"alloc B b1", "ctx_index=1 live_contexts=2 live_buffers=1 calls=1"},
         {"alloc A a2",
          "ctx_index=0 live_contexts=2 live_buffers=2 ctx_buffers=1 calls=2 ctx_calls=1"},
         {"alloc B b2",
          "ctx_index=1 live_contexts=2 live_buffers=3 ctx_buffers=1 calls=3 ctx_calls=1"},
         {"sync A", "ctx_index=0 live_contexts=2 live_buffers=4 ctx_buffers=2"},
         {"sync A", "ctx_index=0 live_contexts=2 live_buffers=4 ctx_buffers=2 calls=1 ctx_calls=1"},
     }},
};

TEST(LifecycleCounters, SnapshotsFollowTheContract) {
  for (const Sequence& sequence : kSequences) {
    SCOPED_TRACE(sequence.name);
    CallScript script;
    for (std::size_t i = 0; i < sequence.steps.size(); ++i) {
      const Step& step = sequence.steps[i];
      script.run(step.call);
      ASSERT_EQ(script.entries().size(), i + 1) << "each step is one device call";
      if (step.expect.empty()) continue;
      const CounterSnapshot actual = script.entries().back().counters;
      const CounterSnapshot expected = snapshotOf(step.expect);
      for (std::size_t c = 0; c < kCounterCount; ++c) {
        const auto counter = static_cast<Counter>(c);
        EXPECT_EQ(actual[counter], expected[counter])
            << "step " << i + 1 << " '" << step.call << "': " << counterName(counter);
      }
    }
  }
}

TEST(LifecycleCounters, CallSitesNameTheCallAndItsContext) {
  CallScript script;
  for (std::string_view step : {"create A", "alloc A x", "destroy A", "free x"}) {
    script.run(step);
  }
  const auto& e = script.entries();
  ASSERT_EQ(e.size(), 4U);
  EXPECT_EQ(e[0].site.point, CallPoint::CtxCreate);
  EXPECT_FALSE(e[0].site.ctx.has_value()) << "the context does not exist yet";
  EXPECT_EQ(e[1].site.point, CallPoint::BufAlloc);
  EXPECT_EQ(e[2].site.point, CallPoint::CtxDestroy);
  EXPECT_EQ(e[3].site.point, CallPoint::BufFree);
  EXPECT_EQ(e[3].site.ctx, e[2].site.ctx) << "a buffer's calls belong to its owner";
  EXPECT_TRUE(e[3].site.buffer.has_value());
}

// An impossible texture count is the backend's to reject; the seam must not read past the array.
TEST(LifecycleCounters, LaunchWithTooManyTexturesReachesTheBackend) {
  CallScript script;
  for (std::string_view step : {"create A", "alloc A fb"}) {
    script.run(step);
  }
  RasterLaunch launch;
  launch.framebuffer = script.buffer("fb");
  launch.vertices = launch.framebuffer;
  launch.textureCount = 0xffffffffU;
  script.device().launch(script.context("A"), launch);
  EXPECT_EQ(script.log().launches.size(), 1U);
}

}  // namespace
}  // namespace gpufuzz::test
