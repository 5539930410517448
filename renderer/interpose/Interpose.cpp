// Interpose.cpp: libgpufuzz-interpose.so, which the harness preloads into a target's process
// (docs/failures.md, Targets). It defines the entry points of the runtime-call seam
// (RuntimeSeam.h) that a mark can fail, for each runtime built in:
//  - OpenCL (InterposeOpenCl.cpp): the ICD loader's entry points;
//  - CUDA (InterposeCuda.cpp): the driver's, linked, looked up with dlsym or cuGetProcAddress;
//  - Vulkan (VulkanLayer.cpp): a layer the harness enables, whose manifest names this library.
// Unarmed, every call goes straight to the runtime.
//
// The client libraries arm it around each marked operation, on the thread that runs the
// operation, through the functions below.
#include <dlfcn.h>

#include <cstdio>
#include <optional>
#include <string_view>

#include "renderer/device/RuntimeSeam.h"

/// Whether this process calls a runtime the interposer covers: 1 once the OpenCL loader, the CUDA
/// driver or the Vulkan loader is loaded, else 0. A client whose target calls none answers a
/// marked file `unsupported`, since no mark could fail anything there.
extern "C" __attribute__((visibility("default"))) int gpufuzz_interpose_covers() {
  for (const char* library : {
#if GPUFUZZ_INTERPOSE_OPENCL
         "libOpenCL.so.1",
#endif
#if GPUFUZZ_INTERPOSE_CUDA
             "libcuda.so.1",
#endif
#if GPUFUZZ_INTERPOSE_VULKAN
             "libvulkan.so.1",
#endif
       }) {
    void* loaded = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    if (loaded == nullptr) continue;
    dlclose(loaded);
    return 1;
  }
  return 0;
}

/// Arms this thread: its `nth` call that can fail with `word` ("oom", "host-oom", "lost") fails.
/// Returns 0, or -1 for an unknown word or an `nth` of 0.
extern "C" __attribute__((visibility("default"))) int gpufuzz_interpose_arm(const char* word,
                                                                            unsigned nth) {
  using gpufuzz::FailureKind;
  if (word == nullptr || nth == 0) return -1;
  const std::string_view w(word);
  FailureKind kind = FailureKind::DeviceMemory;
  if (w == "host-oom") {
    kind = FailureKind::HostMemory;
  } else if (w == "lost") {
    kind = FailureKind::DeviceLost;
  } else if (w != "oom") {
    return -1;
  }
  gpufuzz::seam::arm(gpufuzz::CallFailure{kind, nth});
  return 0;
}

/// Disarms this thread: 1 when the armed call came and failed (its entry point's name written
/// to `call`, at most `size` bytes with the terminating zero), else 0.
extern "C" __attribute__((visibility("default"))) int gpufuzz_interpose_disarm(char* call,
                                                                               size_t size) {
  const std::optional<gpufuzz::seam::Fired> fired = gpufuzz::seam::disarm();
  if (!fired) return 0;
  if (call != nullptr && size > 0) std::snprintf(call, size, "%s", fired->call.c_str());
  return 1;
}
