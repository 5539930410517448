// InterposeOpenCl.cpp: OpenCL in libgpufuzz-interpose.so (docs/failures.md, Targets). It
// defines the OpenCL entry points that a mark can fail (OpenClFailures.h); each is an indirect
// function resolved to a wrapper of the runtime-call seam (RuntimeSeam.h), which calls the ICD
// loader's own entry point unless the armed call is due. So a target that calls OpenCL (PyOpenCL,
// say) fails the marked call without changing its code.
#include <dlfcn.h>

#include <mutex>

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
