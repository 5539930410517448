// VulkanSync.cpp: the `vulkan` model's waits, fences, binary and timeline semaphores, and the wait
// oracle: what a wait returned for must be complete, asked of the runtime.
#include <algorithm>
#include <utility>
#include <vector>

#include "renderer/vulkan/VulkanExecutorImpl.h"

namespace gpufuzz::vulkan {

// ---- Waits ----

void Executor::checkComplete(const char* call, uint64_t through) {
  std::vector<std::pair<const TimelineState*, uint64_t>> reachedNow;
  for (const auto& [name, fence] : shadow_.fences) {
    if (fence.submission == 0 || fence.submission > through) continue;
    const VkResult status = vk_.vkGetFenceStatus(device_, fence.handle);
    check("vkGetFenceStatus", status == VK_NOT_READY ? VK_SUCCESS : status, {}, kWait);
    if (status == VK_NOT_READY) {
      fail(kWait, std::string(call) + " returned while fence " + name + " of submission " +
                      std::to_string(fence.submission) + " is VK_NOT_READY");
    }
  }
  for (const auto& [name, timeline] : shadow_.timelines) {
    uint64_t owed = 0;
    for (const auto& [value, submission] : timeline.signals) {
      if (submission <= through) owed = std::max(owed, value);
    }
    if (owed == 0) continue;
    const uint64_t value = counter(timeline.handle, "vkGetSemaphoreCounterValue");
    if (value < owed) {
      fail(kWait, std::string(call) + " returned while timeline " + name + " is at " +
                      std::to_string(value) + ", below the value " + std::to_string(owed) +
                      " a submission before it signals");
    }
    reachedNow.emplace_back(&timeline, value);
  }
  // The layer retires the work that signals a value a counter read showed reached (it may be
  // beyond what the wait waited for): so does the shadow.
  for (const auto& [timeline, value] : reachedNow)
    shadow_.complete(Shadow::signalledThrough(*timeline, value));
}

uint64_t Executor::counter(VkSemaphore handle, const char* call) {
  uint64_t value = 0;
  check(call, vk_.vkGetSemaphoreCounterValue(device_, handle, &value), {}, kWait);
  return value;
}

void Executor::waitIdle(bool device) {
  const auto lock = lockState();
  const char* call = device ? "vkDeviceWaitIdle" : "vkQueueWaitIdle";
  check(call, device ? vk_.vkDeviceWaitIdle(device_) : vk_.vkQueueWaitIdle(queue_), {}, kWait);
  shadow_.completeAll();
  checkComplete(call, shadow_.lastSubmission());
}

// ---- Fences and semaphores ----

void Executor::fenceCreate(const ModelCall& c) {
  const bool signalled = c.word("signalled") == "yes";
  VkFenceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  info.flags = signalled ? VK_FENCE_CREATE_SIGNALED_BIT : 0;
  VkFence fence = VK_NULL_HANDLE;
  check("vkCreateFence", vk_.vkCreateFence(device_, &info, alloc_, &fence), {}, kMake);
  const auto lock = lockState();
  shadow_.fences.add(c.names[0], FenceState{fence, signalled, 0});
}

void Executor::fenceWait(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  FenceState& f = shadow_.fences.named(name);
  if (!f.signalled && f.submission == 0) {
    // Nothing will signal it: a wait without a timeout would never return, so the executor asks
    // with a timeout of 0, and the answer must be VK_TIMEOUT.
    const VkResult result = vk_.vkWaitForFences(device_, 1, &f.handle, VK_TRUE, 0);
    check("vkWaitForFences", result == VK_TIMEOUT ? VK_SUCCESS : result, {}, kWait);
    if (result != VK_TIMEOUT) {
      fail(kWait, "vkWaitForFences: " + vk::resultName(result) + " for fence " + name +
                      ", which was never submitted nor made signalled (expected VK_TIMEOUT)");
    }
    return;
  }
  check("vkWaitForFences", vk_.vkWaitForFences(device_, 1, &f.handle, VK_TRUE, UINT64_MAX), {},
        kWait);
  // The wait returned: the fence is signalled for the layer, whatever the check below finds.
  if (f.submission != 0) shadow_.complete(f.submission);
  f.signalled = true;
  const VkResult status = vk_.vkGetFenceStatus(device_, f.handle);
  if (status != VK_SUCCESS) {
    fail(kWait, "vkWaitForFences returned while fence " + name + " is " + vk::resultName(status) +
                    " (vkGetFenceStatus)");
  }
  checkComplete("vkWaitForFences", f.submission);
}

void Executor::fenceStatus(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  FenceState& f = shadow_.fences.named(name);
  const VkResult status = vk_.vkGetFenceStatus(device_, f.handle);
  check("vkGetFenceStatus", status == VK_NOT_READY ? VK_SUCCESS : status, {}, kWait);
  if (f.signalled && status != VK_SUCCESS) {
    fail(kWait, "vkGetFenceStatus: " + vk::resultName(status) + " for fence " + name +
                    ", which is signalled (a wait saw it, or it was made so)");
  }
  if (!f.signalled && f.submission == 0 && status != VK_NOT_READY) {
    fail(kWait, "vkGetFenceStatus: " + vk::resultName(status) + " for fence " + name +
                    ", which was never submitted nor made signalled");
  }
  // A fence seen signalled completes its submission, for the layer as for the executor.
  if (status == VK_SUCCESS && f.submission != 0) shadow_.complete(f.submission);
}

void Executor::fenceReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  FenceState& f = shadow_.fences.named(name);
  const std::optional<Breach> breach = shadow_.predictFenceReset(name);
  if (guard("vkResetFences", breach) ||
      check("vkResetFences", vk_.vkResetFences(device_, 1, &f.handle), breach, kEnd))
    return;
  f.signalled = false;
  f.submission = 0;
}

void Executor::fenceDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("fence", name, "vkDestroyFence", shadow_.predictFenceDestroy(name));
}

void Executor::semaphoreCreate(const ModelCall& c) {
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check("vkCreateSemaphore", vk_.vkCreateSemaphore(device_, &info, alloc_, &semaphore), {}, kMake);
  const auto lock = lockState();
  shadow_.semaphores.add(c.names[0], {}).handle = semaphore;
}

void Executor::semaphoreDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("semaphore", name, "vkDestroySemaphore", shadow_.predictSemaphoreDestroy(name));
}

void Executor::timelineCreate(const ModelCall& c) {
  VkSemaphoreTypeCreateInfo type{};
  type.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  info.pNext = &type;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  check("vkCreateSemaphore", vk_.vkCreateSemaphore(device_, &info, alloc_, &semaphore), {}, kMake);
  const auto lock = lockState();
  shadow_.timelines.add(c.names[0], {}).handle = semaphore;
}

void Executor::timelineSignal(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  TimelineState& t = shadow_.timelines.named(name);
  const std::optional<Breach> breach = shadow_.predictTimelineSignal(name);
  if (guard("vkSignalSemaphore", breach)) return;
  VkSemaphoreSignalInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
  info.semaphore = t.handle;
  info.value = t.promised + 1;
  if (check("vkSignalSemaphore", vk_.vkSignalSemaphore(device_, &info), breach, kWait)) return;
  t.promised = info.value;
  t.reached = info.value;
}

void Executor::timelineWait(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  TimelineState& t = shadow_.timelines.named(name);
  VkSemaphoreWaitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  info.semaphoreCount = 1;
  info.pSemaphores = &t.handle;
  info.pValues = &t.promised;
  check("vkWaitSemaphores", vk_.vkWaitSemaphores(device_, &info, UINT64_MAX), {}, kWait);
  // A wait that returned saw the value reached, and the layer retires the work that signals it
  // then: so does the shadow, before the read below, which a mark may fail.
  t.reached = std::max(t.reached, t.promised);
  shadow_.complete(Shadow::signalledThrough(t, t.promised));
  const uint64_t value = counter(t.handle, "vkGetSemaphoreCounterValue");
  if (value < t.promised) {
    fail(kWait, "vkWaitSemaphores returned while timeline " + name + " is at " +
                    std::to_string(value) + ", below the value " + std::to_string(t.promised) +
                    " it waited for");
  }
  t.reached = std::max(t.reached, value);
  // The layer retires the work that signals a value the counter read showed reached.
  shadow_.complete(Shadow::signalledThrough(t, value));
}

void Executor::timelineValue(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  TimelineState& t = shadow_.timelines.named(name);
  const uint64_t value = counter(t.handle, "vkGetSemaphoreCounterValue");
  if (value < t.reached || value > t.promised) {
    fail(kWait, "vkGetSemaphoreCounterValue: timeline " + name + " is at " + std::to_string(value) +
                    ", outside " + std::to_string(t.reached) + ".." + std::to_string(t.promised) +
                    " (reached .. signalled so far)");
  }
  t.reached = value;
  // The layer retires the work that signals a value the counter has reached.
  shadow_.complete(Shadow::signalledThrough(t, value));
}

void Executor::timelineDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("timeline", name, "vkDestroySemaphore", shadow_.predictSemaphoreDestroy(name));
}

}  // namespace gpufuzz::vulkan
