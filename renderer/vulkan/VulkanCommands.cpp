// VulkanCommands.cpp: the `vulkan` model's command pools and command buffers, what they record,
// and the queue's submits.
#include <algorithm>
#include <vector>

#include "renderer/vulkan/VulkanExecutorImpl.h"

namespace gpufuzz::vulkan {

using Phase = CmdState::Phase;

// ---- Command pools and command buffers ----

void Executor::poolCreate(const ModelCall& c) {
  VkCommandPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  info.queueFamilyIndex = family_;
  // Every pool lets its command buffers be reset one by one: a record begins a buffer again.
  info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VkCommandPool pool = VK_NULL_HANDLE;
  // No callbacks for pools: lavapipe 22.3.6 then frees, inside vkCmdPipelineBarrier, a block the
  // callbacks never gave (corpus/runtimes/README.md, not reduced).
  check("vkCreateCommandPool", vk_.vkCreateCommandPool(device_, &info, nullptr, &pool), {}, kMake);
  const auto lock = lockState();
  shadow_.pools.add(c.names[0], {}).handle = pool;
}

void Executor::poolReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPool(name);
  const auto lock = lockState();
  PoolState& pool = shadow_.pools.named(name);
  const std::optional<Breach> breach = shadow_.predictPoolReset(name);
  if (guard("vkResetCommandPool", breach) ||
      check("vkResetCommandPool", vk_.vkResetCommandPool(device_, pool.handle, 0), breach, kEnd))
    return;
  for (const std::string& n : pool.cmds)
    Shadow::reset(cmd(n));
}

void Executor::poolDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPool(name);
  const auto lock = lockState();
  end("pool", name, "vkDestroyCommandPool", shadow_.predictPoolDestroy(name));
}

void Executor::cmdAllocate(const ModelCall& c) {
  const std::string& poolName = c.names[0];
  auto poolLock = lockPool(poolName);
  VkCommandBufferAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  {
    const auto lock = lockState();
    info.commandPool = shadow_.pools.named(poolName).handle;
  }
  info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  info.commandBufferCount = 1;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  check("vkAllocateCommandBuffers", vk_.vkAllocateCommandBuffers(device_, &info, &commands), {},
        kMake);
  const auto lock = lockState();
  CmdState& cb = shadow_.cmds.add(c.names[1], {});
  cb.handle = commands;
  cb.pool = poolName;
  shadow_.pools.named(poolName).cmds.insert(c.names[1]);
}

std::pair<VkCommandBuffer, std::optional<Breach>> Executor::predictOn(
    const std::string& name, std::optional<Breach> (Shadow::*predict)(const std::string&) const) {
  const auto lock = lockState();
  return {cmd(name).handle, (shadow_.*predict)(name)};
}

void Executor::cmdBegin(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto [handle, breach] = predictOn(name, &Shadow::predictBegin);
  if (guard("vkBeginCommandBuffer", breach)) return;
  if (!breach) resetUnseenInvalid(name);
  const std::string_view usage = c.word("usage");
  const bool oneTime = usage == "one_time";
  const bool simultaneous = usage == "simultaneous";
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = oneTime        ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT
                : simultaneous ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                               : 0;
  if (check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(handle, &begin), breach, kRecord))
    return;
  const auto lock = lockState();
  Shadow::begin(cmd(name), oneTime, simultaneous);
}

bool Executor::beginIfNeeded(const std::string& name, const char* call) {
  std::optional<Breach> breach;
  VkCommandBuffer handle = VK_NULL_HANDLE;
  {
    const auto lock = lockState();
    const CmdState& cb = cmd(name);
    handle = cb.handle;
    if (!cb.freed && cb.phase == Phase::Recording) return true;
    breach = shadow_.predictBegin(name);
  }
  // Recording into a buffer that is not recording begins it first (a new recording, which
  // resets an executable or invalid one: every pool allows that), for simultaneous use, so that
  // submitting it again while it is pending is valid. A refused begin refuses the record too:
  // recording into a buffer that is not recording would break another rule.
  if (guard(call, breach)) return false;
  if (!breach) resetUnseenInvalid(name);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
  if (check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(handle, &begin), breach, kRecord))
    return false;
  const auto lock = lockState();
  Shadow::begin(cmd(name), false, true);
  return true;
}

void Executor::resetUnseenInvalid(const std::string& name) {
  const auto lock = lockState();
  const CmdState& cb = cmd(name);
  if (cb.phase != Phase::Invalid) return;
  // A begin resets an invalid buffer implicitly, but the layer does not always see it so:
  // - invalid by a use it does not track (a copy, before 1.3.292), it takes the buffer for
  //   recording or executable, and would report a begin of one recording;
  // - gone invalid while recording, the 1.3.239 layer begins it again without forgetting what
  //   it used, and reports those objects' ends at the next end or submit.
  // An explicit reset first is valid (the pool has the reset bit; it is not pending), and the
  // begin after it is clean for both.
  check("vkResetCommandBuffer", vk_.vkResetCommandBuffer(cb.handle, 0), {}, kRecord);
}

void Executor::cmdEnd(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto [handle, breach] = predictOn(name, &Shadow::predictEnd);
  if (guard("vkEndCommandBuffer", breach) ||
      check("vkEndCommandBuffer", vk_.vkEndCommandBuffer(handle), breach, kRecord))
    return;
  const auto lock = lockState();
  cmd(name).phase = Phase::Executable;
}

void Executor::cmdReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  const std::optional<Breach> breach = shadow_.predictCmdReset(name);
  if (guard("vkResetCommandBuffer", breach) ||
      check("vkResetCommandBuffer", vk_.vkResetCommandBuffer(cb.handle, 0), breach, kEnd))
    return;
  Shadow::reset(cb);
}

void Executor::cmdFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  end("cmd", name, "vkFreeCommandBuffers", shadow_.predictCmdFree(name));
}

// ---- Recording ----

void Executor::barrier(VkCommandBuffer commands) {
  VkMemoryBarrier all{};
  all.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  all.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  all.dstAccessMask =
      VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_HOST_READ_BIT;
  vk_.vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                           VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                           &all, 0, nullptr, 0, nullptr);
}

void Executor::cmdFill(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& buffer = c.names[1];
  auto poolLock = lockPoolOf(name);
  if (!beginIfNeeded(name, "vkCmdFillBuffer")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  const VkCommandBuffer handle = cmd(name).handle;
  const VkBuffer target = shadow_.buffers.named(buffer).handle;
  const std::optional<Breach> breach = shadow_.predictFill(buffer);
  const auto value = static_cast<uint32_t>(c.arg("value"));
  if (guard("vkCmdFillBuffer", breach)) return;
  vk_.vkCmdFillBuffer(handle, target, 0, VK_WHOLE_SIZE, value);
  if (check("vkCmdFillBuffer", std::nullopt, breach, kRecord)) return;
  barrier(handle);
  shadow_.record(cmd(name), Recorded{Recorded::Kind::Fill, buffer, "", value, false});
}

void Executor::cmdCopy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& src = c.names[1];
  const std::string& dst = c.names[2];
  auto poolLock = lockPoolOf(name);
  if (!beginIfNeeded(name, "vkCmdCopyBuffer")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  const VkCommandBuffer handle = cmd(name).handle;
  const BufferState& from = shadow_.buffers.named(src);
  const BufferState& to = shadow_.buffers.named(dst);
  const VkBufferCopy region{0, 0, std::min(from.size, to.size)};
  const std::optional<Breach> breach = shadow_.predictCopy(src, dst);
  if (guard("vkCmdCopyBuffer", breach)) return;
  vk_.vkCmdCopyBuffer(handle, from.handle, to.handle, 1, &region);
  if (check("vkCmdCopyBuffer", std::nullopt, breach, kRecord)) return;
  barrier(handle);
  shadow_.record(cmd(name), Recorded{Recorded::Kind::Copy, dst, src, 0, false});
}

void Executor::cmdDispatch(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& pipelineName = c.names[1];
  const std::string& setName = c.names[2];
  auto poolLock = lockPoolOf(name);
  std::optional<Breach> breach;
  {
    const auto lock = lockState();
    breach = shadow_.predictBindSet(pipelineName, setName);
  }
  if (guard("vkCmdBindDescriptorSets", breach) || !beginIfNeeded(name, "vkCmdDispatch")) return;
  // Recording runs under the executor's lock too: a free on another thread between the
  // shadow's look and the call would change what the layer sees the command use.
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  const PipelineState& p = shadow_.pipelines.named(pipelineName);
  const VkPipelineLayout layout = shadow_.layouts.named(p.layout).handle;
  const SetState& s = shadow_.sets.named(setName);
  const BufferState* b = shadow_.buffers.find(s.buffer);
  const uint64_t words = b == nullptr ? 0 : b->size / 4;
  breach = shadow_.predictDispatch(setName);
  const auto value = static_cast<uint32_t>(c.arg("value"));
  if (guard("vkCmdDispatch", breach)) return;
  vk_.vkCmdBindPipeline(cb.handle, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle);
  vk_.vkCmdBindDescriptorSets(cb.handle, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &s.handle, 0,
                              nullptr);
  vk_.vkCmdPushConstants(cb.handle, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof value, &value);
  const auto groups = static_cast<uint32_t>(std::max<uint64_t>(1, (words + kGroup - 1) / kGroup));
  vk_.vkCmdDispatch(cb.handle, groups, 1, 1);
  const bool refused = check("vkCmdDispatch", std::nullopt, breach, kRecord);
  if (!refused) barrier(cb.handle);
  // The binds before a refused dispatch were made: the shadow records them either way, and the
  // executor refuses what breaks a rule through them (lavapipe crashes on a bound set freed
  // before a submit).
  shadow_.bindForDispatch(cb, pipelineName, setName, !refused);
  if (!refused)
    shadow_.record(cb, Recorded{Recorded::Kind::Dispatch, s.buffer, "", value, p.xorOp});
}

// ---- The queue ----

void Executor::recordForSubmit(CmdState& cb) {
  if (cb.phase == Phase::Initial) {
    VkCommandBufferBeginInfo begin{};
    begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    begin.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
    check("vkBeginCommandBuffer", vk_.vkBeginCommandBuffer(cb.handle, &begin), {}, kRecord);
    cb.oneTime = false;
    cb.simultaneous = true;
    cb.submittedSinceBegin = false;
    // Begun: an end that fails leaves it recording, for the layer as for the shadow.
    cb.phase = Phase::Recording;
  }
  check("vkEndCommandBuffer", vk_.vkEndCommandBuffer(cb.handle), {}, kRecord);
  cb.phase = Phase::Executable;
}

VkFence Executor::resetSeenFence(const std::string& fence) {
  if (fence.empty()) return VK_NULL_HANDLE;
  FenceState& f = shadow_.fences.named(fence);
  if (f.signalled) {
    check("vkResetFences", vk_.vkResetFences(device_, 1, &f.handle), {}, kRecord);
    f.signalled = false;
    f.submission = 0;
  }
  return f.handle;
}

namespace {

/// The arrays of one vkQueueSubmit's VkSubmitInfo, which points into them.
struct SubmitArrays {
  std::vector<VkSemaphore> signals, waits;
  std::vector<uint64_t> signalValues, waitValues;
  std::vector<VkPipelineStageFlags> stages;
  VkTimelineSemaphoreSubmitInfo values{};
  VkSubmitInfo info{};

  SubmitArrays(const Shadow& shadow, const SubmitSync& sync, const VkCommandBuffer& commands) {
    if (!sync.signal.empty()) {
      signals.push_back(shadow.semaphores.named(sync.signal).handle);
      signalValues.push_back(0);
    }
    if (!sync.wait.empty()) {
      waits.push_back(shadow.semaphores.named(sync.wait).handle);
      waitValues.push_back(0);
      stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    }
    if (!sync.timeline.empty()) {
      signals.push_back(shadow.timelines.named(sync.timeline).handle);
      signalValues.push_back(shadow.nextTimelineValue(sync));
    }
    // A timeline is waited for at the value last promised, which an earlier submission or the
    // host signals, so the queue never waits for a signal that nothing will send.
    for (const std::string& t : sync.timelineWaits) {
      waits.push_back(shadow.timelines.named(t).handle);
      waitValues.push_back(shadow.timelines.named(t).promised);
      stages.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
    }
    values.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
    values.waitSemaphoreValueCount = static_cast<uint32_t>(waitValues.size());
    values.pWaitSemaphoreValues = waitValues.data();
    values.signalSemaphoreValueCount = static_cast<uint32_t>(signalValues.size());
    values.pSignalSemaphoreValues = signalValues.data();
    info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
    if (!sync.timeline.empty() || !sync.timelineWaits.empty()) info.pNext = &values;
    info.waitSemaphoreCount = static_cast<uint32_t>(waits.size());
    info.pWaitSemaphores = waits.data();
    info.pWaitDstStageMask = stages.data();
    info.commandBufferCount = 1;
    info.pCommandBuffers = &commands;
    info.signalSemaphoreCount = static_cast<uint32_t>(signals.size());
    info.pSignalSemaphores = signals.data();
  }
  SubmitArrays(const SubmitArrays&) = delete;
  SubmitArrays& operator=(const SubmitArrays&) = delete;
};

}  // namespace

void Executor::submit(const ModelCall& call, const SubmitSync& sync) {
  const std::string& name = call.names[0];
  auto poolLock = lockPoolOf(name);
  const auto lock = lockState();
  CmdState& cb = cmd(name);
  const SubmitPrediction predicted = shadow_.predictSubmit(name, sync);
  const std::optional<Breach>& breach = predicted.breach;
  if (guard("vkQueueSubmit", breach)) return;
  // A submit of a command buffer that is not executable records it first: an initial one
  // begins (and so is empty), a recording one ends.
  if (predicted.commandsFine && cb.phase != Phase::Executable) recordForSubmit(cb);
  // A fence a wait has seen signalled is reset first, even for a submit the layer will refuse
  // (else the layer would report that instead); one still pending is the rule above.
  const VkFence fence = resetSeenFence(sync.fence);
  const SubmitArrays arrays(shadow_, sync, cb.handle);
  if (check("vkQueueSubmit", vk_.vkQueueSubmit(queue_, 1, &arrays.info, fence), breach, kRecord))
    return;
  shadow_.submit(cb, sync);
}

}  // namespace gpufuzz::vulkan
