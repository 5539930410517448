// VulkanResources.cpp: the `vulkan` model's buffers and memory, descriptor pools and sets, pipeline
// layouts and compute pipelines.
#include <cstdio>

#include "renderer/device/DeviceError.h"
#include "renderer/vulkan/VulkanExecutorImpl.h"

namespace gpufuzz::vulkan {

// ---- Buffers and memory ----

void Executor::bufferCreate(const ModelCall& c) {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = c.arg("size");
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer = VK_NULL_HANDLE;
  check("vkCreateBuffer", vk_.vkCreateBuffer(device_, &info, alloc_, &buffer), {}, kMake);
  VkMemoryRequirements needs{};
  vk_.vkGetBufferMemoryRequirements(device_, buffer, &needs);
  const auto lock = lockState();
  BufferState& b = shadow_.buffers.add(c.names[0], {});
  b.handle = buffer;
  b.size = info.size;
  b.required = needs.size;
  b.memoryTypes = needs.memoryTypeBits;
}

void Executor::bufferDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("buffer", name, "vkDestroyBuffer", shadow_.predictBufferDestroy(name));
}

bool Executor::bind(const std::string& buffer, const std::string& memory, const char* call) {
  const VkBuffer b = shadow_.buffers.named(buffer).handle;
  const VkDeviceMemory m = shadow_.memories.named(memory).handle;
  const std::optional<Breach> breach = shadow_.predictMemoryBind(buffer, memory);
  if (guard(call, breach) || check(call, vk_.vkBindBufferMemory(device_, b, m, 0), breach, kMake))
    return false;
  shadow_.bind(buffer, memory);
  return true;
}

void Executor::memoryAllocate(const ModelCall& c) {
  const std::string& buffer = c.names[0];
  const std::string& name = c.names[1];
  VkMemoryAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  info.memoryTypeIndex = memoryType_;
  {
    const auto lock = lockState();
    info.allocationSize = shadow_.buffers.named(buffer).required;
  }
  VkDeviceMemory memory = VK_NULL_HANDLE;
  check("vkAllocateMemory", vk_.vkAllocateMemory(device_, &info, alloc_, &memory), {}, kMake);
  const auto lock = lockState();
  MemoryState& m = shadow_.memories.add(name, {});
  m.handle = memory;
  m.size = info.allocationSize;
  m.bytes.assign(m.size, -1);
  // Allocated for the buffer and bound to it at once, the way most programs bind. A refused bind
  // leaves the memory allocated and unbound: later uses of its name stay defined. A failed bind
  // fails the operation, whose memory was then never made: it is freed here.
  try {
    bind(buffer, name, "vkBindBufferMemory");
  } catch (const InvalidUse&) {
    throw;
  } catch (const DeviceError&) {
    vk_.vkFreeMemory(device_, memory, alloc_);
    shadow_.memories.erase(name);
    throw;
  }
}

void Executor::memoryBind(const ModelCall& c) {
  const auto lock = lockState();
  bind(c.names[0], c.names[1], "vkBindBufferMemory");
}

void Executor::memoryFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("memory", name, "vkFreeMemory", shadow_.predictMemoryFree(name));
}

void Executor::memoryRead(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  const MemoryState& m = shadow_.memories.named(name);
  void* mapped = nullptr;
  check("vkMapMemory", vk_.vkMapMemory(device_, m.handle, 0, VK_WHOLE_SIZE, 0, &mapped), {}, kRead);
  const auto* bytes = static_cast<const uint8_t*>(mapped);
  // Bytes a pending submission writes are the device's until a wait: only the others are known.
  std::optional<uint64_t> wrong;
  for (uint64_t i = shadow_.settledFrom(name); i < m.size && !wrong; ++i) {
    if (m.bytes[i] >= 0 && bytes[i] != m.bytes[i]) wrong = i;
  }
  const uint8_t seen = wrong ? bytes[*wrong] : 0;
  vk_.vkUnmapMemory(device_, m.handle);
  check("vkUnmapMemory", VK_SUCCESS, {}, kRead);
  if (wrong) {
    failed_.trip();
    char text[160];
    std::snprintf(text, sizeof text, "memory %s byte %llu is 0x%02x, the operations wrote 0x%02x",
                  name.c_str(), static_cast<unsigned long long>(*wrong), seen,
                  static_cast<unsigned>(m.bytes[*wrong]));
    throw DataMismatch(text);
  }
}

// ---- Descriptor pools and sets ----

void Executor::dpoolCreate(const ModelCall& c) {
  const bool freeSets = c.word("free_sets") == "yes";
  const VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kSetsPerPool};
  VkDescriptorPoolCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  info.flags = freeSets ? VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT : 0;
  info.maxSets = kSetsPerPool;
  info.poolSizeCount = 1;
  info.pPoolSizes = &size;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  check("vkCreateDescriptorPool", vk_.vkCreateDescriptorPool(device_, &info, alloc_, &pool), {},
        kMake);
  const auto lock = lockState();
  DpoolState& d = shadow_.dpools.add(c.names[0], {});
  d.handle = pool;
  d.freeSets = freeSets;
}

void Executor::dpoolReset(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpool(name);
  const auto lock = lockState();
  DpoolState& d = shadow_.dpools.named(name);
  const std::optional<Breach> breach = shadow_.predictDpoolReset(name);
  if (guard("vkResetDescriptorPool", breach) ||
      check("vkResetDescriptorPool", vk_.vkResetDescriptorPool(device_, d.handle, 0), breach, kEnd))
    return;
  shadow_.dropSets(d);
}

void Executor::dpoolDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpool(name);
  const auto lock = lockState();
  end("dpool", name, "vkDestroyDescriptorPool", shadow_.predictDpoolDestroy(name));
}

void Executor::setAllocate(const ModelCall& c) {
  const std::string& dpool = c.names[0];
  auto dpoolLock = lockDpool(dpool);
  VkDescriptorSetAllocateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  {
    const auto lock = lockState();
    info.descriptorPool = shadow_.dpools.named(dpool).handle;
  }
  info.descriptorSetCount = 1;
  info.pSetLayouts = &setLayout_;
  VkDescriptorSet set = VK_NULL_HANDLE;
  check("vkAllocateDescriptorSets", vk_.vkAllocateDescriptorSets(device_, &info, &set), {}, kMake);
  const auto lock = lockState();
  SetState& s = shadow_.sets.add(c.names[1], {});
  s.handle = set;
  s.dpool = dpool;
  shadow_.dpools.named(dpool).sets.insert(c.names[1]);
}

void Executor::setUpdate(const ModelCall& c) {
  const std::string& name = c.names[0];
  const std::string& buffer = c.names[1];
  const auto lock = lockState();
  SetState& s = shadow_.sets.named(name);
  const std::optional<Breach> breach = shadow_.predictSetUpdate(name, buffer);
  if (guard("vkUpdateDescriptorSets", breach)) return;
  const VkDescriptorBufferInfo target{shadow_.buffers.named(buffer).handle, 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet write{};
  write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
  write.dstSet = s.handle;
  write.dstBinding = 0;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &target;
  vk_.vkUpdateDescriptorSets(device_, 1, &write, 0, nullptr);
  if (check("vkUpdateDescriptorSets", std::nullopt, breach, kRecord)) return;
  shadow_.invalidateUsers(name, "descriptor set " + name + " it binds was updated",
                          "VkDescriptorSet");
  s.buffer = buffer;
}

void Executor::setFree(const ModelCall& c) {
  const std::string& name = c.names[0];
  auto dpoolLock = lockDpoolOf(name);
  const auto lock = lockState();
  end("set", name, "vkFreeDescriptorSets", shadow_.predictSetFree(name));
}

// ---- Pipeline layouts and pipelines ----

void Executor::layoutCreate(const ModelCall& c) {
  const VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  info.setLayoutCount = 1;
  info.pSetLayouts = &setLayout_;
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &push;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  check("vkCreatePipelineLayout", vk_.vkCreatePipelineLayout(device_, &info, alloc_, &layout), {},
        kMake);
  const auto lock = lockState();
  shadow_.layouts.add(c.names[0], {}).handle = layout;
}

void Executor::layoutDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("layout", name, "vkDestroyPipelineLayout", shadow_.predictLayoutDestroy(name));
}

void Executor::pipelineCreate(const ModelCall& c) {
  const std::string& layoutName = c.names[0];
  const bool xorOp = c.word("op") == "xor";
  const uint32_t op = xorOp ? 1 : 0;
  const VkSpecializationMapEntry entry{0, 0, sizeof op};
  VkSpecializationInfo special{};
  special.mapEntryCount = 1;
  special.pMapEntries = &entry;
  special.dataSize = sizeof op;
  special.pData = &op;
  VkComputePipelineCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader_;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &special;
  {
    const auto lock = lockState();
    info.layout = shadow_.layouts.named(layoutName).handle;
  }
  VkPipeline pipeline = VK_NULL_HANDLE;
  check("vkCreateComputePipelines",
        vk_.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &info, alloc_, &pipeline), {},
        kMake);
  const auto lock = lockState();
  shadow_.pipelines.add(c.names[1], PipelineState{pipeline, layoutName, xorOp});
}

void Executor::pipelineDestroy(const ModelCall& c) {
  const std::string& name = c.names[0];
  const auto lock = lockState();
  end("pipeline", name, "vkDestroyPipeline", shadow_.predictPipelineDestroy(name));
}

}  // namespace gpufuzz::vulkan
