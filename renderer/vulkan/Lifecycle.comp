// Lifecycle.comp: the vulkan model's compute kernel (model/models/vulkan.model, cmd_dispatch).
// Each invocation updates one 32-bit word of the storage buffer bound at set 0, binding 0:
// word + value (kOp 0, pipeline_create op=add) or word ^ value (kOp 1, op=xor). The executor's
// host shadow computes the same, so memory_read checks what the dispatch wrote.
#version 450

layout(local_size_x = 64) in;

layout(constant_id = 0) const uint kOp = 0;

layout(push_constant) uniform Push {
  uint value;
} push;

layout(std430, set = 0, binding = 0) buffer Words {
  uint words[];
};

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= words.length()) return;
  words[i] = kOp == 0 ? words[i] + push.value : words[i] ^ push.value;
}
