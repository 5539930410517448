// Interpose.cpp: libgpufuzz-interpose.so, which the harness preloads into a target's process
// (docs/failures.md, Targets). It defines the OpenCL entry points that a mark can fail
// (OpenClFailures.h); each is an indirect function resolved to a wrapper of the runtime-call seam
// (RuntimeSeam.h), which calls the ICD loader's own entry point unless the armed call is due. So a
// target that calls OpenCL (PyOpenCL, say) fails the marked call without changing its code.
//
// The client libraries arm it around each marked operation, on the thread that runs the
// operation, through the two functions below. Unarmed, every call goes straight to the loader.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "renderer/device/RuntimeSeam.h"
#include "renderer/opencl/OpenClFailures.h"

namespace gpufuzz {
namespace {

/// The loader's own entry points: the next definition after this library's, or the loader's once
/// a program loads it later (Python imports PyOpenCL after the process started).
const OpenClApi& realEntries() {
  static OpenClApi real;
  static std::once_flag once;
  std::call_once(once, [] {
    void* loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (loader == nullptr) loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL);
#define GPUFUZZ_CL_RESOLVE(errors, member, name, kinds)                           \
  real.member = reinterpret_cast<decltype(real.member)>(dlsym(RTLD_NEXT, #name)); \
  if (real.member == nullptr && loader != nullptr)                                \
    real.member = reinterpret_cast<decltype(real.member)>(dlsym(loader, #name));
    GPUFUZZ_CL_FAILABLE(GPUFUZZ_CL_RESOLVE)
#undef GPUFUZZ_CL_RESOLVE
  });
  return real;
}

}  // namespace
}  // namespace gpufuzz

// The exported entry points: each an indirect function whose resolver returns the seam's wrapper,
// a constant address, so the resolver calls nothing while the dynamic linker runs it.
#define GPUFUZZ_CL_EXPORT(errors, member, name, kinds)                                            \
  extern "C" decltype(&::name) gpufuzz_resolve_##name() {                                         \
    using namespace gpufuzz;                                                                      \
    return &seam::Entry<decltype(&::name)>::call<errors, &realEntries, &OpenClApi::member, kinds, \
                                                 seam::Name(#name)>;                              \
  }                                                                                               \
  extern "C" decltype(::name) name __attribute__((ifunc("gpufuzz_resolve_" #name)));
GPUFUZZ_CL_FAILABLE(GPUFUZZ_CL_EXPORT)
#undef GPUFUZZ_CL_EXPORT

/// Whether this process calls a runtime the interposer covers: 1 once the OpenCL loader is
/// loaded, else 0. A client whose target calls none answers a marked file `unsupported`, since no
/// mark could fail anything there.
extern "C" __attribute__((visibility("default"))) int gpufuzz_interpose_covers() {
  void* loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (loader == nullptr) return 0;
  dlclose(loader);
  return 1;
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
