// LifecycleFacts.h: what each step of a sequence establishes in the renderer's lifecycle under a
// teardown policy: which contexts it introduces, which work it queues or waits for, and which
// releases leave work pending or buffers alive. Explanations group necessary steps by these roles,
// and causes count them, so two failures of one bug share them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/Sequence.h"
#include "renderer/TeardownPolicy.h"

namespace gpufuzz {

/// What a step establishes, from the lifecycle replay: the groups of the necessary steps.
enum class StepRole : uint8_t {
  IntroducesContext,        // create, ctx_create: one more device context
  Allocates,                // buf_create
  QueuesWork,               // draw, or set_textures uploading textures
  Waits,                    // sync, read_back
  ReplacesTextures,         // set_textures over earlier textures
  DestroysWithPending,      // a context released while work queued on it has not been waited for
  DestroysWithLiveBuffers,  // a context released while buffers it owns live
  Destroys,                 // any other release of a renderer or a context
  FreesBuffer,              // buf_destroy
  Other,
};
/// "introduces-context", ...: the role's name in JSON.
std::string_view stepRoleName(StepRole role);
/// "introduce a context", ...: the heading of the role's group of steps, for people.
std::string_view stepRoleHeading(StepRole role);

/// One operation of a sequence, as the lifecycle replay sees it.
struct StepFacts {
  StepRole role = StepRole::Other;
  /// For people: "introduces renderer r1: context #1 (the second context)".
  std::string establishes;
  /// The 0-based creation ordinal of the device context the operation concerns, if any.
  std::optional<uint32_t> context;
  /// In a model without the renderer's semantics: the step's lifecycle role in the model's
  /// terms ("ends-pool-owning-buf", "uses-stream-pending"), which causes count. Empty otherwise.
  std::string modelRole = {};
};
/// The role a cause counts and a report groups by: modelRole, else the StepRole's name.
std::string roleKey(const StepFacts& f);

/// Replays `seq` through the lifecycle the renderer's `policy` gives it (which renderers and
/// contexts are alive, which have work queued since their last wait, how many contexts were
/// created so far). A sequence of a model without the renderer's semantics is replayed through
/// its model instead (modelFacts). `seq` must be valid.
std::vector<StepFacts> lifecycleFacts(const Sequence& seq, TeardownPolicy policy);

/// "context #1 (the second context)": a device context by its creation ordinal, as facts cite it.
std::string contextText(uint32_t index);

}  // namespace gpufuzz
