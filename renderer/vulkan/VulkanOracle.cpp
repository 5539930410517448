// VulkanOracle.cpp: the `vulkan` model's oracle of rules: a predicted call refused by the layer or
// by the executor, the per-kind table of ending objects, zombies, the release and the leak check.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "renderer/device/DeviceError.h"
#include "renderer/vulkan/VulkanExecutorImpl.h"

namespace gpufuzz::vulkan {

// ---- The oracle of rules ----

void Executor::fail(CallPoint point, const std::string& message) {
  failed_.trip();
  throw DeviceError(point, message);
}

bool Executor::guard(const char* call, const std::optional<Breach>& breach) {
  if (!breach || breach->vuid == unpredicted_) return false;
  if (breach->uncertain && instance_.validation) throw Uncertain{};
  if (breach->deadHandle || !instance_.validation || !breach->layerMisses.empty()) {
    refusal(call, *breach, false);
    return true;
  }
  return false;
}

bool Executor::check(const char* call, std::optional<VkResult> result,
                     const std::optional<Breach>& predicted, CallPoint point) {
  const std::optional<Breach> breach =
      predicted && predicted->vuid == unpredicted_ ? std::nullopt : predicted;
  if (std::optional<vk::ValidationMessages::Error> error = messages_.take()) {
    const bool named = breach && (error->vuid == breach->vuid ||
                                  std::find(breach->also.begin(), breach->also.end(),
                                            error->vuid) != breach->also.end());
    // Skipped: a call that returns VkResult says so with VK_ERROR_VALIDATION_FAILED_EXT. A void
    // call returns early when a validate-phase check asks to skip, and every rule the shadow
    // predicts is checked there; a zombie's clean end at the sequence's end confirms it.
    const bool skipped = !result || *result == VK_ERROR_VALIDATION_FAILED_EXT;
    if (named && skipped) {
      refusal(call, *breach, true);
      return true;
    }
    failed_.trip();
    std::string text = std::string(call) + ": " +
                       (error->vuid.empty() ? "validation error" : error->vuid) + ": " +
                       error->message;
    if (!breach) {
      text += " (not predicted by the executor)";
    } else if (!named) {
      text += " (the executor predicted " + breach->vuid + ")";
    } else {
      text += " (the layer did not skip the call: it returned " + vk::resultName(*result) + ")";
    }
    throw InvalidUse(point, text);
  }
  if (breach) {
    fail(point, std::string(call) + ": the validation layer did not report " + breach->vuid + ": " +
                    breach->why + " (the call went through)");
  }
  if (result && *result != VK_SUCCESS)
    fail(point, std::string(call) + ": " + vk::resultName(*result));
  return false;
}

void Executor::refusal(const char* call, const Breach& breach, bool byLayer) {
  const std::lock_guard lock(tallyMutex_);
  (byLayer ? refusedByLayer_ : refusedByExecutor_).push_back(std::string(call) + " " + breach.vuid);
}

bool Executor::copiesUnseen() const {
  return instance_.layerVersion < VK_MAKE_API_VERSION(0, 1, 3, 292);
}

// ---- Ending objects, zombies and the release ----

const std::array<Executor::Kind, Executor::kKinds>& Executor::kinds() {
  // Owned kinds before their owners, the order zombies end in; a pipeline's layout is never a
  // zombie.
  static const std::array<Kind, kKinds> table{{
      {"cmd",
       [](Executor& e, const std::string& name) -> std::optional<VkResult> {
         CmdState& cb = e.cmd(name);
         if (!cb.freed)
           e.vk_.vkFreeCommandBuffers(e.device_, e.shadow_.pools.named(cb.pool).handle, 1,
                                      &cb.handle);
         return std::nullopt;
       },
       &Shadow::forgetCmd},
      {"set",
       [](Executor& e, const std::string& name) -> std::optional<VkResult> {
         const SetState& s = e.shadow_.sets.named(name);
         if (s.freed) return std::nullopt;
         return e.vk_.vkFreeDescriptorSets(e.device_, e.shadow_.dpools.named(s.dpool).handle, 1,
                                           &s.handle);
       },
       &Shadow::forgetSet, &Shadow::setEndsWithPool},
      {"pipeline", &destroy<&Shadow::pipelines, &vk::InstanceApi::vkDestroyPipeline>,
       &Shadow::forgetPipeline},
      {"fence", &destroy<&Shadow::fences, &vk::InstanceApi::vkDestroyFence>, &Shadow::forgetFence},
      {"semaphore", &destroy<&Shadow::semaphores, &vk::InstanceApi::vkDestroySemaphore>,
       &Shadow::forgetSemaphore},
      {"timeline", &destroy<&Shadow::timelines, &vk::InstanceApi::vkDestroySemaphore>,
       &Shadow::forgetTimeline},
      {"pool", &destroy<&Shadow::pools, &vk::InstanceApi::vkDestroyCommandPool, false>,
       &Shadow::forgetPool},
      {"dpool", &destroy<&Shadow::dpools, &vk::InstanceApi::vkDestroyDescriptorPool>,
       &Shadow::forgetDpool},
      {"layout", &destroy<&Shadow::layouts, &vk::InstanceApi::vkDestroyPipelineLayout>,
       &Shadow::forgetLayout},
      {"memory", &destroy<&Shadow::memories, &vk::InstanceApi::vkFreeMemory>,
       &Shadow::forgetMemory},
      {"buffer", &destroy<&Shadow::buffers, &vk::InstanceApi::vkDestroyBuffer>,
       &Shadow::forgetBuffer},
  }};
  return table;
}

const Executor::Kind& Executor::kind(std::string_view name) {
  const auto& table = kinds();
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const Kind& k) { return k.name == name; });
  if (it == table.end()) throw std::logic_error("model vulkan has no kind " + std::string(name));
  return *it;
}

void Executor::end(std::string_view kindName, const std::string& name, const char* call,
                   const std::optional<Breach>& breach) {
  const Kind& k = kind(kindName);
  bool refused = guard(call, breach);
  if (!refused) refused = check(call, k.end(*this, name), breach, kEnd);
  if (refused && !breach->deadHandle) {
    // Refused as predicted: the object lives on, and pending work may use it. The sequence's
    // name is dead; the executor ends the handle at the sequence's end, once the device is idle.
    shadow_.zombies.emplace(name, k.name);
    return;
  }
  // Ended, or a handle that its pool freed already: the name goes.
  forget(k, name);
}

void Executor::forget(const Kind& kind, const std::string& name) {
  shadow_.zombies.erase(name);
  (shadow_.*kind.forget)(name);
}

void Executor::idleForEnd() {
  // What is left may still be in use by pending work: waiting for the device makes every end
  // after it valid (the model's leftovers and zombies are not its breaches).
  if (idleForRelease_) return;
  check("vkDeviceWaitIdle", vk_.vkDeviceWaitIdle(device_), {}, kWait);
  shadow_.completeAll();
  checkComplete("vkDeviceWaitIdle", shadow_.lastSubmission());
  idleForRelease_ = true;
}

void Executor::endZombies() {
  for (const Kind& k : kinds()) {
    std::vector<std::string> names;
    for (const auto& [name, zombieKind] : shadow_.zombies) {
      if (zombieKind == k.name) names.push_back(name);
    }
    for (const std::string& name : names) {
      // A set of a pool without the free-set bit cannot be freed alone: its pool's end frees it.
      if (k.endsWithOwner == nullptr || !(shadow_.*k.endsWithOwner)(name))
        check(k.end(*this, name), name);
      forget(k, name);
    }
  }
}

void Executor::check(std::optional<VkResult> result, const std::string& zombie) {
  // The layer refused this object's end earlier. Had that call gone through, ending the handle
  // now would be a second end, which the layer reports: then the refusal was not real.
  if (std::optional<vk::ValidationMessages::Error> error = messages_.take()) {
    fail(kEnd, "ending " + zombie + ", whose end the layer refused as predicted earlier: " +
                   error->vuid + ": " + error->message +
                   " (the refused call went through, or the zombie was ended twice)");
  }
  if (result && *result != VK_SUCCESS) {
    fail(kEnd,
         "ending " + zombie + ", whose end the layer refused earlier: " + vk::resultName(*result));
  }
}

void Executor::release(std::string_view kindName, const std::string& name) {
  failed_.guard([&] { table().release(*this, defaultReleases_, kindName, name); });
}

void Executor::releaseLeftover(const Kind& k, const std::string& name) {
  const auto lock = lockState();
  idleForEnd();
  // A set of a pool without the free-set bit goes with the pool.
  if (k.endsWithOwner == nullptr || !(shadow_.*k.endsWithOwner)(name))
    check("release", k.end(*this, name), {}, kEnd);
  forget(k, name);
}

std::string Executor::leaked() {
  const auto lock = lockState();
  if (!shadow_.zombies.empty()) {
    failed_.guard([&] {
      idleForEnd();
      endZombies();
    });
  }
  summarize();
  kit::LeakReport report;
  if (const std::string alive = shadow_.alive(); !alive.empty()) {
    report.add("the sequence's release left " + alive + " alive on the device");
  } else if (const int64_t held = vk::liveHostAllocations(); held != 0) {
    // Every object made with the callbacks is destroyed: what the driver still holds through them
    // it kept past its objects' destroy, an error path's leak as the CTS's alloc_callback_fail
    // sees.
    report.add("the driver still holds " + std::to_string(held) +
               " host allocations made through the objects' allocation callbacks, every object "
               "destroyed");
  }
  return report.text();
}

void Executor::summarize() {
  const std::lock_guard lock(tallyMutex_);
  const std::size_t layer = refusedByLayer_.size(), own = refusedByExecutor_.size();
  if (layer + own != 0) {
    const auto list = [](const std::vector<std::string>& calls) {
      std::string text;
      for (const std::string& call : calls)
        text += (text.empty() ? ": " : ", ") + call;
      return text;
    };
    std::string line = "vulkan: " + std::to_string(layer) +
                       " operations refused by the layer as predicted" + list(refusedByLayer_);
    if (own != 0) {
      line += "; " + std::to_string(own) + " refused by the executor" + list(refusedByExecutor_);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  // GPUFUZZ_VULKAN_TALLY=FILE: one line a sequence, appended, so a campaign's children can be
  // counted (tests/renderer/vulkan/campaign.sh): the two counts, then the VUIDs the layer refused.
  if (const char* tally = std::getenv("GPUFUZZ_VULKAN_TALLY")) {
    if (FILE* out = std::fopen(tally, "a")) {
      std::string calls;
      for (const std::string& call : refusedByLayer_)
        calls += " " + call.substr(call.find(' ') + 1);
      std::fprintf(out, "refused-by-layer %zu refused-by-executor %zu%s\n", layer, own,
                   calls.c_str());
      std::fclose(out);
    }
  }
  refusedByLayer_.clear();
  refusedByExecutor_.clear();
}

}  // namespace gpufuzz::vulkan
