// VulkanShadow.cpp: the executor's bookkeeping of objects, pending work and memory contents.
#include "renderer/vulkan/VulkanShadow.h"

#include <algorithm>

namespace gpufuzz::vulkan {

namespace {

/// The 32-bit word at `at`, when all four bytes are known.
std::optional<uint32_t> word(const std::vector<int16_t>& bytes, uint64_t at) {
  uint32_t value = 0;
  for (uint64_t i = 0; i < 4; ++i) {
    if (bytes[at + i] < 0) return std::nullopt;
    value |= static_cast<uint32_t>(bytes[at + i]) << (8 * i);
  }
  return value;
}

void setWord(std::vector<int16_t>& bytes, uint64_t at, std::optional<uint32_t> value) {
  for (uint64_t i = 0; i < 4; ++i)
    bytes[at + i] = value ? static_cast<int16_t>((*value >> (8 * i)) & 0xff) : int16_t{-1};
}

/// Why the executor, not the layer, refuses a rule about a use the layer does not track.
constexpr const char* kUnseenUse =
    "the validation layer does not track this use: what vkCmdCopyBuffer uses, before 1.3.292 "
    "(corpus/runtimes/README.md), and a descriptor set bound for a dispatch it refused";

/// A breach for a command buffer whose pool was destroyed: its handle is freed.
std::optional<Breach> freedCmd(const CmdState& cb, const std::string& name, const char* vuid) {
  if (!cb.freed) return std::nullopt;
  return Breach{vuid, "command buffer " + name + " was freed with its pool " + cb.pool, true};
}

/// A breach for a descriptor set that its pool freed: its handle is dead.
std::optional<Breach> freedSet(const SetState& set, const std::string& name, const char* vuid) {
  if (!set.freed) return std::nullopt;
  return Breach{vuid, "descriptor set " + name + " was freed with its pool " + set.dpool, true};
}

/// Whether the layer takes `cb` for recording: it is, or went invalid unseen while it was.
bool layerSeesRecording(const CmdState& cb) {
  return cb.phase == CmdState::Phase::Recording ||
         (cb.phase == CmdState::Phase::Invalid && !cb.layerSeesInvalid && cb.invalidWhileRecording);
}

template <typename T>
void describe(std::string& out, const kit::Kind<T>& objects) {
  for (const auto& [name, object] : objects)
    out += (out.empty() ? "" : ", ") + objects.kind() + " " + name;
}

}  // namespace

const Submission* Shadow::pendingUse(const std::string& name) const {
  for (const Submission& s : submissions_) {
    if (s.uses.count(name) != 0) return &s;
  }
  return nullptr;
}

bool Shadow::layerSeesPendingUse(const std::string& name) const {
  return std::any_of(submissions_.begin(), submissions_.end(),
                     [&](const Submission& s) { return s.layerUses.count(name) != 0; });
}

void Shadow::use(CmdState& cmd, const std::string& name) {
  cmd.uses.insert(name);
  cmd.layerUses.insert(name);
}

void Shadow::complete(uint64_t number) {
  completed_ = std::max(completed_, number);
  std::erase_if(submissions_, [&](const Submission& s) { return s.number <= completed_; });
  for (auto& [name, fence] : fences) {
    if (fence.submission != 0 && fence.submission <= completed_) fence.signalled = true;
  }
  for (auto& [name, timeline] : timelines) {
    for (const auto& [value, submission] : timeline.signals) {
      if (submission <= completed_) timeline.reached = std::max(timeline.reached, value);
    }
  }
  for (auto& [name, cmd] : cmds) {
    // A one-time command buffer goes invalid once its execution completes.
    if (cmd.oneTime && cmd.submittedSinceBegin && cmd.lastSubmission <= completed_ &&
        cmd.phase == CmdState::Phase::Executable) {
      cmd.phase = CmdState::Phase::Invalid;
      cmd.invalidBecause = "it was recorded for one submission, which completed";
      cmd.layerSeesInvalid = true;
      // The id of layer 1.3.239, then of 1.4.309.
      cmd.invalidIds = {"UNASSIGNED-CoreValidation-DrawState-CommandBufferSingleSubmitViolation",
                        "UNASSIGNED-DrawState-CommandBufferSingleSubmitViolation"};
    }
  }
}

void Shadow::invalidateUsers(const std::string& name, const std::string& why, const char* object) {
  for (auto& [cmdName, cmd] : cmds) {
    if (cmd.freed || cmd.uses.count(name) == 0) continue;
    if (cmd.phase == CmdState::Phase::Initial) continue;
    const bool seen = cmd.layerUses.count(name) != 0;
    const std::string id =
        std::string("UNASSIGNED-CoreValidation-DrawState-InvalidCommandBuffer-") + object;
    if (cmd.phase == CmdState::Phase::Invalid) {
      cmd.layerSeesInvalid = cmd.layerSeesInvalid || seen;
      cmd.invalidIds.push_back(id);
      continue;
    }
    cmd.invalidWhileRecording = cmd.phase == CmdState::Phase::Recording;
    cmd.phase = CmdState::Phase::Invalid;
    cmd.invalidBecause = why;
    cmd.layerSeesInvalid = seen;
    cmd.invalidIds = {id};
  }
}

MemoryState* Shadow::memoryOf(const std::string& buffer) {
  const BufferState* b = buffers.find(buffer);
  return b == nullptr || b->memory.empty() ? nullptr : memories.find(b->memory);
}

void Shadow::record(CmdState& cmd, Recorded command) {
  // The layer 1.3.239 tracks what fills and dispatches use, not what copies use.
  const bool tracked = command.kind != Recorded::Kind::Copy || layerTracksCopies;
  const auto useBuffer = [&](const std::string& buffer) {
    if (buffer.empty()) return;
    const BufferState* b = buffers.find(buffer);
    for (const std::string& name : {buffer, b != nullptr ? b->memory : ""}) {
      if (name.empty()) continue;
      cmd.uses.insert(name);
      if (tracked) cmd.layerUses.insert(name);
    }
  };
  useBuffer(command.dst);
  useBuffer(command.src);
  cmd.commands.push_back(std::move(command));
}

void Shadow::apply(const Recorded& command, Submission& submission) {
  MemoryState* dst = memoryOf(command.dst);
  if (dst == nullptr) return;
  const uint64_t dstSize = buffers.named(command.dst).size;
  uint64_t written = 0;
  switch (command.kind) {
    case Recorded::Kind::Fill:
      // VK_WHOLE_SIZE: the largest multiple of 4 that fits.
      written = dstSize / 4 * 4;
      for (uint64_t at = 0; at < written; at += 4)
        setWord(dst->bytes, at, command.value);
      break;
    case Recorded::Kind::Copy: {
      const MemoryState* src = memoryOf(command.src);
      if (src == nullptr) return;
      written = std::min(dstSize, buffers.named(command.src).size);
      // Copied through a snapshot: aliased memory is the executor's refusal, not undefined here.
      const std::vector<int16_t> from(src->bytes.begin(), src->bytes.begin() + written);
      std::copy(from.begin(), from.end(), dst->bytes.begin());
      break;
    }
    case Recorded::Kind::Dispatch:
      written = dstSize / 4 * 4;
      for (uint64_t at = 0; at < written; at += 4) {
        const std::optional<uint32_t> old = word(dst->bytes, at);
        setWord(dst->bytes, at,
                old ? std::optional(command.xorOp ? *old ^ command.value : *old + command.value)
                    : std::nullopt);
      }
      break;
  }
  uint64_t& extent = submission.writes[buffers.named(command.dst).memory];
  extent = std::max(extent, written);
}

uint64_t Shadow::queue(CmdState& cmd, const std::set<std::string>& extra, bool syncs) {
  Submission s;
  s.number = ++last_;
  s.semaphores = syncs;
  s.uses = cmd.uses;
  s.uses.insert(extra.begin(), extra.end());
  s.layerUses = cmd.layerUses;
  s.layerUses.insert(extra.begin(), extra.end());
  for (const Recorded& command : cmd.commands)
    apply(command, s);
  cmd.lastSubmission = s.number;
  cmd.submittedSinceBegin = true;
  submissions_.push_back(std::move(s));
  return last_;
}

uint64_t Shadow::nextTimelineValue(const SubmitSync& sync) const {
  return sync.timeline.empty() ? 0 : timelines.named(sync.timeline).promised + 1;
}

void Shadow::submit(CmdState& cmd, const SubmitSync& sync) {
  std::set<std::string> extra{cmd.pool};
  for (const std::string* name : {&sync.signal, &sync.wait, &sync.timeline, &sync.fence}) {
    if (!name->empty()) extra.insert(*name);
  }
  extra.insert(sync.timelineWaits.begin(), sync.timelineWaits.end());
  const uint64_t timelineValue = nextTimelineValue(sync);
  const uint64_t number = queue(cmd, extra, !sync.wait.empty() || !sync.timelineWaits.empty());
  if (!sync.fence.empty()) fences.named(sync.fence).submission = number;
  if (!sync.signal.empty()) semaphores.named(sync.signal).signalled = true;
  if (!sync.wait.empty()) semaphores.named(sync.wait).signalled = false;
  if (!sync.timeline.empty()) {
    TimelineState& t = timelines.named(sync.timeline);
    t.promised = timelineValue;
    t.signals[timelineValue] = number;
  }
}

bool Shadow::semaphoreWorkPending() const {
  return std::any_of(submissions_.begin(), submissions_.end(),
                     [](const Submission& s) { return s.semaphores; });
}

bool Shadow::pendingUncertain() const {
  return layerRetiresOnItsOwn ? !submissions_.empty() : semaphoreWorkPending();
}

uint64_t Shadow::settledFrom(const std::string& memory) const {
  uint64_t from = 0;
  for (const Submission& s : submissions_) {
    const auto it = s.writes.find(memory);
    if (it != s.writes.end()) from = std::max(from, it->second);
  }
  return from;
}

std::string Shadow::alive() const {
  std::string out;
  describe(out, pools);
  describe(out, cmds);
  describe(out, fences);
  describe(out, semaphores);
  describe(out, timelines);
  describe(out, buffers);
  describe(out, memories);
  describe(out, dpools);
  describe(out, sets);
  describe(out, layouts);
  describe(out, pipelines);
  return out;
}

// ---- What calls do ----

void Shadow::reset(CmdState& cmd) {
  cmd.phase = CmdState::Phase::Initial;
  cmd.commands.clear();
  cmd.uses.clear();
  cmd.layerUses.clear();
  cmd.layerSeesInvalid = false;
  cmd.submittedSinceBegin = false;
}

void Shadow::begin(CmdState& cmd, bool oneTime, bool simultaneous) {
  reset(cmd);
  cmd.phase = CmdState::Phase::Recording;
  cmd.oneTime = oneTime;
  cmd.simultaneous = simultaneous;
}

void Shadow::bind(const std::string& buffer, const std::string& memory) {
  BufferState& b = buffers.named(buffer);
  b.memory = memory;
  b.boundTo = memory;
  b.everBound = true;
  memories.named(memory).buffers.insert(buffer);
}

void Shadow::dropSets(DpoolState& dpool) {
  for (const std::string& s : dpool.sets) {
    sets.named(s).freed = true;
    invalidateUsers(s, "descriptor set " + s + " it binds was freed with its pool",
                    "VkDescriptorSet");
  }
  dpool.sets.clear();
}

uint64_t Shadow::signalledThrough(const TimelineState& timeline, uint64_t value) {
  uint64_t through = 0;
  for (const auto& [v, submission] : timeline.signals) {
    if (v <= value) through = std::max(through, submission);
  }
  return through;
}

void Shadow::bindForDispatch(CmdState& cmd, const std::string& pipeline, const std::string& set,
                             bool dispatched) {
  const std::string& layout = pipelines.named(pipeline).layout;
  const std::string& dpool = sets.named(set).dpool;
  if (dispatched) {
    for (const std::string& used : {pipeline, layout, set, dpool})
      use(cmd, used);
    return;
  }
  // The layer adds the set and its pool to a command buffer at a dispatch, and it refused this
  // one: it tracks the bound pipeline only.
  use(cmd, pipeline);
  for (const std::string& used : {layout, set, dpool})
    cmd.uses.insert(used);
}

// ---- Ending objects ----

void Shadow::forgetPool(const std::string& name) {
  // Its command buffers are freed with it; their names stay, with dead handles.
  for (const std::string& n : pools.named(name).cmds)
    cmds.named(n).freed = true;
  pools.erase(name);
}

void Shadow::forgetCmd(const std::string& name) {
  const CmdState& cb = cmds.named(name);
  if (!cb.freed) pools.named(cb.pool).cmds.erase(name);
  cmds.erase(name);
}

void Shadow::forgetFence(const std::string& name) {
  fences.erase(name);
}

void Shadow::forgetSemaphore(const std::string& name) {
  semaphores.erase(name);
}

void Shadow::forgetTimeline(const std::string& name) {
  timelines.erase(name);
}

void Shadow::forgetBuffer(const std::string& name) {
  invalidateUsers(name, "buffer " + name + " it uses was destroyed", "VkBuffer");
  const BufferState& b = buffers.named(name);
  if (!b.memory.empty()) memories.named(b.memory).buffers.erase(name);
  buffers.erase(name);
}

void Shadow::forgetMemory(const std::string& name) {
  invalidateUsers(name, "memory " + name + " bound to a buffer it uses was freed",
                  "VkDeviceMemory");
  for (const std::string& b : memories.named(name).buffers)
    buffers.named(b).memory.clear();
  memories.erase(name);
}

void Shadow::forgetDpool(const std::string& name) {
  dropSets(dpools.named(name));
  dpools.erase(name);
}

void Shadow::forgetSet(const std::string& name) {
  const SetState& s = sets.named(name);
  if (!s.freed) {
    invalidateUsers(name, "descriptor set " + name + " it binds was freed", "VkDescriptorSet");
    dpools.named(s.dpool).sets.erase(name);
  }
  sets.erase(name);
}

void Shadow::forgetLayout(const std::string& name) {
  layouts.erase(name);
}

void Shadow::forgetPipeline(const std::string& name) {
  invalidateUsers(name, "pipeline " + name + " it binds was destroyed", "VkPipeline");
  pipelines.erase(name);
}

bool Shadow::setEndsWithPool(const std::string& name) const {
  const SetState& s = sets.named(name);
  return !s.freed && !dpools.named(s.dpool).freeSets;
}

// ---- Predictions ----

Breach Shadow::inUse(std::string vuid, std::string why, const std::string& name) const {
  Breach breach(std::move(vuid), std::move(why));
  breach.uncertain = pendingUncertain();
  if (!name.empty() && !layerSeesPendingUse(name)) breach.layerMisses = kUnseenUse;
  return breach;
}

std::optional<Breach> Shadow::unbound(const std::string& buffer, const char* vuid) const {
  const BufferState& b = buffers.named(buffer);
  if (!b.memory.empty()) return std::nullopt;
  return Breach{vuid, "buffer " + buffer + " has no memory bound" +
                          (b.everBound ? " (its memory was freed)" : "")};
}

std::optional<Breach> Shadow::pendingCmd(const std::string& name, const char* vuid) const {
  const CmdState& cb = cmds.named(name);
  if (!pending(cb.lastSubmission)) return std::nullopt;
  return inUse(vuid, "command buffer " + name + " is pending (submission " +
                         std::to_string(cb.lastSubmission) + ")");
}

std::optional<Breach> Shadow::pendingObject(const std::string& name, const char* vuid,
                                            const std::string& what, bool layerMayMiss) const {
  const Submission* s = pendingUse(name);
  if (s == nullptr) return std::nullopt;
  return inUse(vuid,
               what + " " + name + " is used by pending submission " + std::to_string(s->number),
               layerMayMiss ? name : std::string());
}

std::optional<Breach> Shadow::pendingPool(const std::string& pool, const char* vuid) const {
  const Submission* s = pendingUse(pool);
  if (s == nullptr) return std::nullopt;
  return inUse(vuid, "a command buffer of pool " + pool + " is pending (submission " +
                         std::to_string(s->number) + ")");
}

std::optional<Breach> Shadow::predictPoolReset(const std::string& pool) const {
  return pendingPool(pool, "VUID-vkResetCommandPool-commandPool-00040");
}

std::optional<Breach> Shadow::predictPoolDestroy(const std::string& pool) const {
  return pendingPool(pool, "VUID-vkDestroyCommandPool-commandPool-00041");
}

std::optional<Breach> Shadow::predictBegin(const std::string& name) const {
  const CmdState& cb = cmds.named(name);
  std::optional<Breach> breach =
      freedCmd(cb, name, "VUID-vkBeginCommandBuffer-commandBuffer-parameter");
  if (!breach) breach = pendingCmd(name, "VUID-vkBeginCommandBuffer-commandBuffer-00049");
  if (!breach && cb.phase == CmdState::Phase::Recording) {
    breach = Breach{"VUID-vkBeginCommandBuffer-commandBuffer-00049",
                    "command buffer " + name + " is recording already"};
  }
  return breach;
}

std::optional<Breach> Shadow::predictEnd(const std::string& name) const {
  const CmdState& cb = cmds.named(name);
  std::optional<Breach> breach =
      freedCmd(cb, name, "VUID-vkEndCommandBuffer-commandBuffer-parameter");
  if (breach || cb.phase == CmdState::Phase::Recording) return breach;
  const bool invalid = cb.phase == CmdState::Phase::Invalid;
  breach = Breach{"VUID-vkEndCommandBuffer-commandBuffer-00059",
                  "command buffer " + name + " is not recording" +
                      (invalid ? " (invalid: " + cb.invalidBecause + ")" : std::string())};
  // The 1.3.239 layer names an invalid buffer's cause instead. One it does not see go invalid
  // while recording it still takes for recording: it would end it, unreported.
  if (invalid) breach->also = cb.invalidIds;
  if (layerSeesRecording(cb)) breach->layerMisses = kUnseenUse;
  return breach;
}

std::optional<Breach> Shadow::predictCmdReset(const std::string& name) const {
  std::optional<Breach> breach =
      freedCmd(cmds.named(name), name, "VUID-vkResetCommandBuffer-commandBuffer-parameter");
  if (!breach) breach = pendingCmd(name, "VUID-vkResetCommandBuffer-commandBuffer-00045");
  return breach;
}

std::optional<Breach> Shadow::predictCmdFree(const std::string& name) const {
  std::optional<Breach> breach =
      freedCmd(cmds.named(name), name, "VUID-vkFreeCommandBuffers-pCommandBuffers-parameter");
  if (!breach) breach = pendingCmd(name, "VUID-vkFreeCommandBuffers-pCommandBuffers-00047");
  return breach;
}

std::optional<Breach> Shadow::predictFill(const std::string& buffer) const {
  return unbound(buffer, "VUID-vkCmdFillBuffer-dstBuffer-00031");
}

std::optional<Breach> Shadow::predictCopy(const std::string& src, const std::string& dst) const {
  const BufferState& s = buffers.named(src);
  const BufferState& d = buffers.named(dst);
  std::optional<Breach> breach = unbound(src, "VUID-vkCmdCopyBuffer-srcBuffer-00119");
  if (!breach) breach = unbound(dst, "VUID-vkCmdCopyBuffer-dstBuffer-00121");
  if (breach && !s.boundTo.empty() && s.boundTo == d.boundTo) {
    // Both were bound to one memory, since freed: layer 1.4.309 reports the overlap first.
    breach->also.push_back("VUID-vkCmdCopyBuffer-pRegions-00117");
  }
  if (!breach && s.memory == d.memory) {
    breach = Breach{"VUID-vkCmdCopyBuffer-pRegions-00117",
                    "buffers " + src + " and " + dst + " are bound to the same memory " + s.memory +
                        ", so the copy's regions overlap in memory"};
  }
  return breach;
}

std::optional<Breach> Shadow::predictBindSet(const std::string& pipeline,
                                             const std::string& set) const {
  const SetState& s = sets.named(set);
  const PipelineState& p = pipelines.named(pipeline);
  std::optional<Breach> breach =
      freedSet(s, set, "VUID-vkCmdBindDescriptorSets-pDescriptorSets-parameter");
  if (!breach && !layouts.contains(p.layout)) {
    breach =
        Breach{"VUID-vkCmdBindDescriptorSets-layout-parameter",
               "pipeline layout " + p.layout + " of pipeline " + pipeline + " was destroyed", true};
  }
  return breach;
}

std::optional<Breach> Shadow::predictDispatch(const std::string& set) const {
  const SetState& s = sets.named(set);
  std::optional<Breach> breach;
  if (s.buffer.empty()) {
    breach = Breach{"VUID-vkCmdDispatch-None-02699",
                    "descriptor set " + set + " was never written (set_update)"};
  } else if (!buffers.contains(s.buffer)) {
    breach = Breach{"VUID-vkCmdDispatch-None-02699",
                    "the buffer " + s.buffer + " of descriptor set " + set + " was destroyed"};
  } else {
    breach = unbound(s.buffer, "VUID-vkCmdDispatch-None-02699");
  }
  // Layer 1.4.309 names a descriptor unwritten or of a destroyed buffer 08114.
  if (breach) breach->also.push_back("VUID-vkCmdDispatch-None-08114");
  return breach;
}

SubmitPrediction Shadow::predictSubmit(const std::string& name, const SubmitSync& sync) const {
  const CmdState& cb = cmds.named(name);
  std::optional<Breach> breach = freedCmd(cb, name, "VUID-VkSubmitInfo-pCommandBuffers-parameter");
  if (!breach && !cb.simultaneous) {
    breach = pendingCmd(name, "VUID-vkQueueSubmit-pCommandBuffers-00071");
  }
  if (!breach && cb.phase == CmdState::Phase::Invalid) {
    breach = Breach{"VUID-vkQueueSubmit-pCommandBuffers-00070",
                    "command buffer " + name + " is invalid: " + cb.invalidBecause};
    breach->also = cb.invalidIds;
    if (!cb.layerSeesInvalid) breach->layerMisses = kUnseenUse;
  }
  const bool commandsFine = !breach;
  // The sync objects' rules. The layer reports the first rule it checks (the fence first in
  // 1.3.239), so each rule the submit breaks is a prediction it may report.
  std::vector<Breach> others;
  if (!sync.fence.empty() && pending(fences.named(sync.fence).submission)) {
    others.push_back(inUse("VUID-vkQueueSubmit-fence-00064",
                           "fence " + sync.fence + " is still pending from submission " +
                               std::to_string(fences.named(sync.fence).submission)));
  }
  if (!sync.signal.empty() && semaphores.named(sync.signal).signalled) {
    others.emplace_back("VUID-vkQueueSubmit-pSignalSemaphores-00067",
                        "binary semaphore " + sync.signal + " is signalled and not yet waited on");
    others.back().also.push_back("UNASSIGNED-CoreValidation-DrawState-QueueForwardProgress");
  }
  if (!sync.wait.empty() && !semaphores.named(sync.wait).signalled) {
    others.emplace_back(
        "VUID-vkQueueSubmit-pWaitSemaphores-03238",
        "binary semaphore " + sync.wait + " has no signal operation submitted to wait on");
  }
  for (const Breach& other : others) {
    if (!breach) {
      breach = other;
      continue;
    }
    breach->why += "; and " + other.why + " (" + other.vuid + ")";
    breach->also.push_back(other.vuid);
    breach->also.insert(breach->also.end(), other.also.begin(), other.also.end());
    breach->uncertain = breach->uncertain || other.uncertain;
  }
  return SubmitPrediction{breach, commandsFine};
}

std::optional<Breach> Shadow::pendingFence(const std::string& fence, const char* vuid) const {
  const FenceState& f = fences.named(fence);
  if (!pending(f.submission)) return std::nullopt;
  return inUse(vuid,
               "fence " + fence + " is pending (submission " + std::to_string(f.submission) + ")");
}

std::optional<Breach> Shadow::predictFenceReset(const std::string& fence) const {
  return pendingFence(fence, "VUID-vkResetFences-pFences-01123");
}

std::optional<Breach> Shadow::predictFenceDestroy(const std::string& fence) const {
  return pendingFence(fence, "VUID-vkDestroyFence-fence-01120");
}

std::optional<Breach> Shadow::predictSemaphoreDestroy(const std::string& semaphore) const {
  // Layers 1.3.239 and 1.4.309 name the rule 05149; 01137 is its number in older registries.
  std::optional<Breach> breach =
      pendingObject(semaphore, "VUID-vkDestroySemaphore-semaphore-05149", "semaphore", false);
  if (breach) breach->also.push_back("VUID-vkDestroySemaphore-semaphore-01137");
  return breach;
}

std::optional<Breach> Shadow::predictTimelineSignal(const std::string& timeline) const {
  const TimelineState& t = timelines.named(timeline);
  for (const auto& [value, submission] : t.signals) {
    if (!pending(submission)) continue;
    return inUse("VUID-VkSemaphoreSignalInfo-value-03259",
                 "the host signals timeline " + timeline + " to " + std::to_string(t.promised + 1) +
                     " while submission " + std::to_string(submission) + " will signal " +
                     std::to_string(value));
  }
  return std::nullopt;
}

std::optional<Breach> Shadow::predictBufferDestroy(const std::string& buffer) const {
  return pendingObject(buffer, "VUID-vkDestroyBuffer-buffer-00922", "buffer", true);
}

std::optional<Breach> Shadow::predictMemoryBind(const std::string& buffer,
                                                const std::string& memory) const {
  const BufferState& b = buffers.named(buffer);
  const MemoryState& m = memories.named(memory);
  if (b.everBound) {
    Breach breach{"VUID-vkBindBufferMemory-buffer-07459",
                  "buffer " + buffer + " was bound to memory before"};
    breach.also.push_back("VUID-vkBindBufferMemory-buffer-01029");
    return breach;
  }
  if (m.size < b.required) {
    return Breach{"VUID-vkBindBufferMemory-size-01037",
                  "memory " + memory + " has " + std::to_string(m.size) + " bytes, buffer " +
                      buffer + " needs " + std::to_string(b.required)};
  }
  return std::nullopt;
}

std::optional<Breach> Shadow::predictMemoryFree(const std::string& memory) const {
  return pendingObject(memory, "VUID-vkFreeMemory-memory-00677", "memory", true);
}

std::optional<Breach> Shadow::predictDpoolReset(const std::string& dpool) const {
  return pendingObject(dpool, "VUID-vkResetDescriptorPool-descriptorPool-00313",
                       "a descriptor set of pool", true);
}

std::optional<Breach> Shadow::predictDpoolDestroy(const std::string& dpool) const {
  return pendingObject(dpool, "VUID-vkDestroyDescriptorPool-descriptorPool-00303",
                       "a descriptor set of pool", true);
}

std::optional<Breach> Shadow::predictSetUpdate(const std::string& set,
                                               const std::string& buffer) const {
  std::optional<Breach> breach =
      freedSet(sets.named(set), set, "VUID-VkWriteDescriptorSet-dstSet-parameter");
  if (!breach) {
    breach = pendingObject(set, "VUID-vkUpdateDescriptorSets-None-03047", "descriptor set", true);
  }
  if (!breach) breach = unbound(buffer, "VUID-VkWriteDescriptorSet-descriptorType-00329");
  return breach;
}

std::optional<Breach> Shadow::predictSetFree(const std::string& set) const {
  const SetState& s = sets.named(set);
  std::optional<Breach> breach =
      freedSet(s, set, "VUID-vkFreeDescriptorSets-pDescriptorSets-parameter");
  if (!breach && !dpools.named(s.dpool).freeSets) {
    breach = Breach{"VUID-vkFreeDescriptorSets-descriptorPool-00312",
                    "descriptor pool " + s.dpool + " was made without the free-set bit"};
  }
  if (!breach) {
    breach = pendingObject(set, "VUID-vkFreeDescriptorSets-pDescriptorSets-00309", "descriptor set",
                           true);
  }
  return breach;
}

std::optional<Breach> Shadow::predictLayoutDestroy(const std::string& layout) const {
  for (const auto& [cmdName, cb] : cmds) {
    if (cb.freed || cb.phase != CmdState::Phase::Recording || cb.uses.count(layout) == 0) continue;
    // The layer has no check of this rule: 1.3.239 does not report it, nor does its source of
    // 2026-08 (corpus/runtimes/README.md). The call is made all the same, so the outcome is
    // `error` (the layer missed it): the destroy does no harm before the buffer is submitted,
    // and nothing is submitted after a failure.
    return Breach{
        "VUID-vkDestroyPipelineLayout-pipelineLayout-02004",
        "command buffer " + cmdName + " that is recording used pipeline layout " + layout};
  }
  return std::nullopt;
}

std::optional<Breach> Shadow::predictPipelineDestroy(const std::string& pipeline) const {
  return pendingObject(pipeline, "VUID-vkDestroyPipeline-pipeline-00765", "pipeline", false);
}

}  // namespace gpufuzz::vulkan
