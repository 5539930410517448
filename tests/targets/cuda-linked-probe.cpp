// cuda-linked-probe: a program linked against libcuda.so.1, run with the interposer preloaded
// (docs/failures.md, Targets). Its calls bind to the interposer's exported entry points: armed
// for the second out-of-memory, its second cuMemAlloc fails without reaching the driver, the
// interposer names the call, and unarmed calls pass. Exit 0 when all of that holds, 1 when not,
// 2 when the interposer is not in the process.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

int main() {
  const auto arm = reinterpret_cast<int (*)(const char*, unsigned)>(
      dlsym(RTLD_DEFAULT, "gpufuzz_interpose_arm"));
  const auto disarm =
      reinterpret_cast<int (*)(char*, size_t)>(dlsym(RTLD_DEFAULT, "gpufuzz_interpose_disarm"));
  if (arm == nullptr || disarm == nullptr) {
    std::fprintf(stderr, "cuda-linked-probe: the interposer is not preloaded\n");
    return 2;
  }
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuCtxCreate(&context, nullptr, 0, device) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuda-linked-probe: no CUDA context\n");
    return 1;
  }
  CUdeviceptr first = 0, second = 0, third = 0;
  arm("oom", 2);
  const CUresult a = cuMemAlloc(&first, 256);
  const CUresult b = cuMemAlloc(&second, 256);
  char call[64] = {};
  const int fired = disarm(call, sizeof call);
  const CUresult c = cuMemAlloc(&third, 256);
  std::printf("armed: %d then %d, fired %d at '%s'; unarmed: %d\n", a, b, fired, call, c);
  const bool ok = a == CUDA_SUCCESS && b == CUDA_ERROR_OUT_OF_MEMORY && fired == 1 &&
                  std::strcmp(call, "cuMemAlloc") == 0 && c == CUDA_SUCCESS;
  cuMemFree(first);
  cuMemFree(third);
  cuCtxDestroy(context);
  return ok ? 0 : 1;
}
