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

template <typename Map>
void describe(std::string& out, const char* kind, const Map& objects) {
  for (const auto& [name, object] : objects)
    out += (out.empty() ? "" : ", ") + std::string(kind) + " " + name;
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
  const auto b = buffers.find(buffer);
  if (b == buffers.end() || b->second.memory.empty()) return nullptr;
  const auto m = memories.find(b->second.memory);
  return m == memories.end() ? nullptr : &m->second;
}

void Shadow::record(CmdState& cmd, Recorded command) {
  // The layer 1.3.239 tracks what fills and dispatches use, not what copies use.
  const bool tracked = command.kind != Recorded::Kind::Copy || layerTracksCopies;
  const auto useBuffer = [&](const std::string& buffer) {
    if (buffer.empty()) return;
    const auto b = buffers.find(buffer);
    for (const std::string& name : {buffer, b != buffers.end() ? b->second.memory : ""}) {
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
  const uint64_t dstSize = buffers.at(command.dst).size;
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
      written = std::min(dstSize, buffers.at(command.src).size);
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
  uint64_t& extent = submission.writes[buffers.at(command.dst).memory];
  extent = std::max(extent, written);
}

uint64_t Shadow::submit(CmdState& cmd, const std::set<std::string>& extra, bool syncs) {
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
  describe(out, "pool", pools);
  describe(out, "cmd", cmds);
  describe(out, "fence", fences);
  describe(out, "semaphore", semaphores);
  describe(out, "timeline", timelines);
  describe(out, "buffer", buffers);
  describe(out, "memory", memories);
  describe(out, "dpool", dpools);
  describe(out, "set", sets);
  describe(out, "layout", layouts);
  describe(out, "pipeline", pipelines);
  return out;
}

}  // namespace gpufuzz::vulkan
