// InterposeCuda.cpp: the CUDA driver API in libgpufuzz-interpose.so (docs/failures.md, Targets).
// A target reaches the driver's entry points three ways, and each is covered:
//  - linked against libcuda.so.1: the versioned symbols of CudaFailures.h are defined here, as
//    indirect functions, so the dynamic linker binds the target's calls to the wrappers;
//  - dlopen and dlsym, as the CUDA runtime and Python bindings load the driver: dlsym is defined
//    here, and hands back a wrapper for a failable entry point;
//  - cuGetProcAddress, which the CUDA runtime asks for every entry point it calls: its answer for
//    a failable name is replaced by a wrapper of the pointer the driver gave.
// A wrapper asks the thread's armed mark (RuntimeSeam.h); when its call is due, it returns
// CUDA_ERROR_OUT_OF_MEMORY without calling the driver, else it calls the pointer it wraps.
//
// The driver's answer for one name depends on the version and flags asked (cuMemAlloc_v2 or the
// 32-bit cuMemAlloc, the _ptsz variants). So a wrapper forwards its six integer registers
// unchanged to the pointer it wraps, whatever the signature, and each name has a few slots, one
// per distinct pointer. Every failable entry point takes at most six integer or pointer
// arguments, except cuLaunchKernel, whose one signature its wrapper declares.
#include <cuda.h>
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <tuple>
#include <utility>

#include "renderer/cuda/CudaDriver.h"
#include "renderer/cuda/CudaFailures.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

using DlsymFn = void* (*)(void*, const char*);

namespace {

using Word = std::uintptr_t;

struct Row {
  const char* name;    // what cuGetProcAddress takes, and what a fired mark reports
  const char* symbol;  // the exported, versioned symbol
  seam::Kinds kinds;
};
constexpr Row kRows[] = {
#define GPUFUZZ_CU_ROW(member, kinds, name, symbol) {#name, #symbol, kinds},
    GPUFUZZ_CU_FAILABLE(GPUFUZZ_CU_ROW)
#undef GPUFUZZ_CU_ROW
};
constexpr std::size_t kRowCount = std::size(kRows);

/// Slot 0 of a row is its exported symbol's, resolved on first call; slots 1 and on hold the
/// distinct pointers that dlsym and cuGetProcAddress gave for the row.
constexpr std::size_t kSlots = 6;
std::array<std::array<std::atomic<void*>, kSlots>, kRowCount> gReal{};

/// glibc's dlsym, which the one defined below hides from every other library.
DlsymFn realDlsym() {
  static const DlsymFn real = [] {
    void* found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (found == nullptr) found = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    return reinterpret_cast<DlsymFn>(found);
  }();
  return real;
}

/// The driver's own definition of `symbol`: the next after this library's, or the driver's once
/// a program loaded it after the process started.
void* driverSymbol(const char* symbol) {
  void* found = realDlsym()(RTLD_NEXT, symbol);
  if (found != nullptr) return found;
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return nullptr;
  found = realDlsym()(driver, symbol);
  dlclose(driver);
  return found;
}

/// What `slot` holds, the driver's `symbol` resolved into it on first use.
void* resolved(std::atomic<void*>& slot, const char* symbol) {
  void* real = slot.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = driverSymbol(symbol);
    slot.store(real, std::memory_order_release);
  }
  return real;
}

template <std::size_t I, std::size_t S>
void* realFor() {
  if constexpr (S == 0) return resolved(gReal[I][S], kRows[I].symbol);
  return gReal[I][S].load(std::memory_order_acquire);
}

/// Six integer registers, passed on as they came: any signature of six or fewer integer and
/// pointer arguments. A wider one keeps its own.
template <typename Fn>
struct Shape;
template <typename... A>
struct Shape<CUresult (*)(A...)> {
  using type = std::conditional_t<(sizeof...(A) > 6), CUresult (*)(A...),
                                  CUresult (*)(Word, Word, Word, Word, Word, Word)>;
};
using RowTypes = std::tuple<
#define GPUFUZZ_CU_TYPE(member, kinds, name, symbol) decltype(CudaDriver::member),
    GPUFUZZ_CU_FAILABLE(GPUFUZZ_CU_TYPE)
#undef GPUFUZZ_CU_TYPE
        void>;
template <std::size_t I>
using ShapeOf = typename Shape<std::tuple_element_t<I, RowTypes>>::type;

template <std::size_t I, std::size_t S, typename Fn>
struct Forward;
template <std::size_t I, std::size_t S, typename... A>
struct Forward<I, S, CUresult (*)(A...)> {
  static CUresult call(A... args) {
    if (seam::detail::armed().on && seam::detail::due(kRows[I].kinds, kRows[I].name)) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    void* real = realFor<I, S>();
    if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
    return reinterpret_cast<CUresult (*)(A...)>(real)(args...);
  }
};

template <std::size_t I, std::size_t... S>
std::array<void*, kSlots> rowWrappers(std::index_sequence<S...>) {
  return {reinterpret_cast<void*>(&Forward<I, S, ShapeOf<I>>::call)...};
}
template <std::size_t... I>
std::array<std::array<void*, kSlots>, kRowCount> allWrappers(std::index_sequence<I...>) {
  return {rowWrappers<I>(std::make_index_sequence<kSlots>{})...};
}
const std::array<std::array<void*, kSlots>, kRowCount>& wrappers() {
  static const auto table = allWrappers(std::make_index_sequence<kRowCount>{});
  return table;
}

/// Whether `address` lies in this library: a wrapper handed out again is not wrapped twice.
bool ours(const void* address) {
  static const void* const mine = [] {
    Dl_info info{};
    return dladdr(reinterpret_cast<const void*>(&ours), &info) != 0 ? info.dli_fbase : nullptr;
  }();
  Dl_info theirs{};
  return mine != nullptr && dladdr(address, &theirs) != 0 && theirs.dli_fbase == mine;
}

/// The wrapper of `real` for row `row`: a slot that holds it already, or a free one. When every
/// slot holds another pointer, `real` itself, which no mark then fails.
void* wrap(std::size_t row, void* real) {
  if (real == nullptr || ours(real)) return real;
  for (std::size_t s = 1; s < kSlots; ++s) {
    void* held = nullptr;
    if (gReal[row][s].compare_exchange_strong(held, real) || held == real) {
      return wrappers()[row][s];
    }
  }
  return real;
}

/// The row of a failable entry point named `name`: its versioned symbol, or its plain name with
/// nothing or a per-thread stream suffix after it. kRowCount when none.
std::size_t rowNamed(const char* name) {
  for (std::size_t i = 0; i < kRowCount; ++i) {
    for (const char* known : {kRows[i].name, kRows[i].symbol}) {
      const std::size_t n = std::strlen(known);
      if (std::strncmp(name, known, n) != 0) continue;
      const char* rest = name + n;
      if (*rest == '\0' || std::strcmp(rest, "_ptsz") == 0 || std::strcmp(rest, "_ptds") == 0) {
        return i;
      }
    }
  }
  return kRowCount;
}

// cuGetProcAddress, in its two signatures: CUDA 12.0 added the query result.
using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);
std::atomic<void*> gGetProcV1{nullptr};
std::atomic<void*> gGetProcV2{nullptr};

void* answer(const char* symbol, void* found);

CUresult getProcV1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  void* real = resolved(gGetProcV1, "cuGetProcAddress");
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  const CUresult r = reinterpret_cast<GetProcV1>(real)(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && symbol != nullptr) *pfn = answer(symbol, *pfn);
  return r;
}

CUresult getProcV2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                   CUdriverProcAddressQueryResult* status) {
  void* real = resolved(gGetProcV2, "cuGetProcAddress_v2");
  if (real == nullptr) return CUDA_ERROR_NOT_FOUND;
  const CUresult r = reinterpret_cast<GetProcV2>(real)(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr && symbol != nullptr) *pfn = answer(symbol, *pfn);
  return r;
}

/// cuGetProcAddress's own pointer, when `found` is the driver's v1 or v2 of it; else null.
void* getProcWrapper(void* found) {
  if (found == resolved(gGetProcV2, "cuGetProcAddress_v2")) {
    return reinterpret_cast<void*>(&getProcV2);
  }
  if (found == resolved(gGetProcV1, "cuGetProcAddress")) {
    return reinterpret_cast<void*>(&getProcV1);
  }
  return nullptr;
}

/// What a program gets for the driver's `found`, asked by the name `symbol`.
void* answer(const char* symbol, void* found) {
  if (found == nullptr || ours(found)) return found;
  if (std::strncmp(symbol, "cuGetProcAddress", 16) == 0) {
    void* wrapper = getProcWrapper(found);
    return wrapper != nullptr ? wrapper : found;
  }
  const std::size_t row = rowNamed(symbol);
  return row == kRowCount ? found : wrap(row, found);
}

}  // namespace
}  // namespace gpufuzz

// dlsym as glibc defines it, except that a failable driver entry point looked up in a library's
// handle comes back wrapped. glibc reads its caller's return address: a lookup relative to the
// caller (RTLD_NEXT, and RTLD_DEFAULT, which searches the caller's scope) or of a name not of the
// driver must reach glibc as a jump, never a call. So dlsym is written in assembly: it jumps to
// glibc's, or to gpufuzz_dlsym_driver for a handle's driver name.
extern "C" {
__attribute__((visibility("hidden"))) gpufuzz::DlsymFn gpufuzz_glibc_dlsym = nullptr;
__attribute__((visibility("hidden"))) gpufuzz::DlsymFn gpufuzz_dlsym_init() {
  gpufuzz_glibc_dlsym = gpufuzz::realDlsym();
  return gpufuzz_glibc_dlsym;
}
__attribute__((visibility("hidden"), used)) void* gpufuzz_dlsym_driver(void* handle,
                                                                       const char* name) {
  return gpufuzz::answer(name, gpufuzz::realDlsym()(handle, name));
}
}

#if defined(__x86_64__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  movq gpufuzz_glibc_dlsym(%rip), %rax
  testq %rax, %rax
  jz 3f
1:
  testq %rdi, %rdi
  jz 2f
  cmpq $-1, %rdi
  je 2f
  cmpb $0x63, (%rsi)
  jne 2f
  cmpb $0x75, 1(%rsi)
  jne 2f
  jmp gpufuzz_dlsym_driver
2:
  jmp *%rax
3:
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call gpufuzz_dlsym_init
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp 1b
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#else
// Elsewhere a compiler's sibling call keeps the caller's address where it can, with no promise.
extern "C" __attribute__((visibility("default"))) void* dlsym(
    void* __restrict handle, const char* __restrict name) noexcept {
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || name[0] != 'c' || name[1] != 'u') {
    return gpufuzz::realDlsym()(handle, name);
  }
  return gpufuzz_dlsym_driver(handle, name);
}
#endif

namespace gpufuzz {
namespace {
/// The row whose versioned symbol is `symbol`.
constexpr std::size_t exportRow(std::string_view symbol) {
  for (std::size_t i = 0; i < kRowCount; ++i) {
    if (std::string_view(kRows[i].symbol) == symbol) return i;
  }
  return kRowCount;
}
}  // namespace
}  // namespace gpufuzz

// The exported entry points: indirect functions whose resolvers return a constant address, so
// they call nothing while the dynamic linker runs them.
#define GPUFUZZ_CU_EXPORT(member, kinds, name, sym)                            \
  extern "C" void (*gpufuzz_resolve_##sym())() {                               \
    using namespace gpufuzz;                                                   \
    constexpr std::size_t row = exportRow(#sym);                               \
    return reinterpret_cast<void (*)()>(&Forward<row, 0, ShapeOf<row>>::call); \
  }                                                                            \
  extern "C" void gpufuzz_export_##sym() __asm__(#sym)                         \
      __attribute__((ifunc("gpufuzz_resolve_" #sym), visibility("default")));
GPUFUZZ_CU_FAILABLE(GPUFUZZ_CU_EXPORT)
#undef GPUFUZZ_CU_EXPORT

extern "C" void (*gpufuzz_resolve_cuGetProcAddress())() {
  return reinterpret_cast<void (*)()>(&gpufuzz::getProcV1);
}
extern "C" void (*gpufuzz_resolve_cuGetProcAddress_v2())() {
  return reinterpret_cast<void (*)()>(&gpufuzz::getProcV2);
}
extern "C" void gpufuzz_export_cuGetProcAddress() __asm__("cuGetProcAddress")
    __attribute__((ifunc("gpufuzz_resolve_cuGetProcAddress"), visibility("default")));
extern "C" void gpufuzz_export_cuGetProcAddress_v2() __asm__("cuGetProcAddress_v2")
    __attribute__((ifunc("gpufuzz_resolve_cuGetProcAddress_v2"), visibility("default")));
