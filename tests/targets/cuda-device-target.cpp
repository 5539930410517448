// cuda-device-target: the device model (contexts and buffers) over the CUDA driver API, as a
// user's program would call it. It calls no mayFail(): the interposer gpufuzz preloads fails its
// marked driver calls (docs/failures.md, Targets). It loads libcuda.so.1 with dlopen, as the CUDA
// runtime does: cuMemAlloc_v2 and cuGetProcAddress_v2 by dlsym, every other entry point by
// cuGetProcAddress (cuda-linked-probe.cpp covers a program linked against the driver). Each error
// path releases what its operation made, so every marked run passes.
//
//   gpufuzz sweep --model device --target cuda-device-target FILE
#include <cuda.h>
#include <dlfcn.h>

#include <map>
#include <memory>
#include <string>

#include "gpufuzz/target.hpp"

namespace {

namespace gt = gpufuzz::target;

/// The entry points this target calls, by their signatures in cuda.h 13.0.
struct Api {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDeviceGet) deviceGet = nullptr;
  decltype(&::cuCtxCreate) ctxCreate = nullptr;
  decltype(&::cuCtxDestroy) ctxDestroy = nullptr;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent = nullptr;
  decltype(&::cuStreamCreate) streamCreate = nullptr;
  decltype(&::cuStreamDestroy) streamDestroy = nullptr;
  decltype(&::cuStreamSynchronize) streamSynchronize = nullptr;
  decltype(&::cuMemAlloc) memAlloc = nullptr;
  decltype(&::cuMemFree) memFree = nullptr;
  decltype(&::cuMemsetD8Async) memsetD8Async = nullptr;
};

template <typename Fn>
void byProcAddress(decltype(&::cuGetProcAddress) getProc, const char* name, Fn& fn) {
  void* found = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (getProc(name, &found, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS ||
      found == nullptr) {
    throw gt::Failure("error", std::string("cuGetProcAddress: no ") + name);
  }
  fn = reinterpret_cast<Fn>(found);
}

Api load() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) throw gt::Failure("error", "no libcuda.so.1");
  const auto getProc =
      reinterpret_cast<decltype(&::cuGetProcAddress)>(dlsym(driver, "cuGetProcAddress_v2"));
  if (getProc == nullptr) throw gt::Failure("error", "libcuda.so.1 has no cuGetProcAddress_v2");
  Api api;
  api.memAlloc = reinterpret_cast<decltype(api.memAlloc)>(dlsym(driver, "cuMemAlloc_v2"));
  if (api.memAlloc == nullptr) throw gt::Failure("error", "libcuda.so.1 has no cuMemAlloc_v2");
  byProcAddress(getProc, "cuInit", api.init);
  byProcAddress(getProc, "cuDeviceGet", api.deviceGet);
  byProcAddress(getProc, "cuCtxCreate", api.ctxCreate);
  byProcAddress(getProc, "cuCtxDestroy", api.ctxDestroy);
  byProcAddress(getProc, "cuCtxSetCurrent", api.ctxSetCurrent);
  byProcAddress(getProc, "cuStreamCreate", api.streamCreate);
  byProcAddress(getProc, "cuStreamDestroy", api.streamDestroy);
  byProcAddress(getProc, "cuStreamSynchronize", api.streamSynchronize);
  byProcAddress(getProc, "cuMemFree", api.memFree);
  byProcAddress(getProc, "cuMemsetD8Async", api.memsetD8Async);
  return api;
}

void check(CUresult status, const char* call) {
  if (status != CUDA_SUCCESS) {
    throw gt::Failure("error", std::string(call) + ": CUDA error " + std::to_string(status));
  }
}

struct Context {
  CUcontext context = nullptr;
  CUstream stream = nullptr;
};
struct Buffer {
  std::string context;
  CUdeviceptr address = 0;
};

class CudaDeviceTarget final : public gt::Target {
 public:
  // The driver is loaded before the first sequence: the client asks once whether this process
  // calls a runtime the interposer covers.
  CudaDeviceTarget() : cu_(load()) {
    handle("ctx_create", [this](const gt::Operation& op) { create(op.name()); });
    handle("buf_create", [this](const gt::Operation& op) {
      const std::string& owner = op.names.at(0);
      const Context& c = contexts_.at(owner);
      check(cu_.ctxSetCurrent(c.context), "cuCtxSetCurrent");
      const auto bytes = static_cast<size_t>(op.arg("bytes", 256));
      CUdeviceptr address = 0;
      check(cu_.memAlloc(&address, bytes), "cuMemAlloc");
      const CUresult cleared = cu_.memsetD8Async(address, 0, bytes, c.stream);
      if (cleared != CUDA_SUCCESS) cu_.memFree(address);  // the buffer was never made; nothing ran
      check(cleared, "cuMemsetD8Async");
      buffers_[op.names.at(1)] = Buffer{owner, address};
    });
    handle("buf_destroy", [this](const gt::Operation& op) {
      const Buffer b = buffers_.at(op.name());
      buffers_.erase(op.name());
      const auto owner = contexts_.find(b.context);
      // A destroyed context freed its buffers with it.
      if (owner == contexts_.end()) return;
      check(cu_.ctxSetCurrent(owner->second.context), "cuCtxSetCurrent");
      // The clear enqueued at its create may not have run yet.
      const CUresult finished = cu_.streamSynchronize(owner->second.stream);
      check(cu_.memFree(b.address), "cuMemFree");
      check(finished, "cuStreamSynchronize");
    });
    handle("ctx_destroy", [this](const gt::Operation& op) {
      const Context c = contexts_.at(op.name());
      contexts_.erase(op.name());
      check(cu_.ctxSetCurrent(c.context), "cuCtxSetCurrent");
      const CUresult finished = cu_.streamSynchronize(c.stream);
      // Destroyed whether or not the wait failed: what a failed teardown leaves is a leak.
      cu_.streamDestroy(c.stream);
      cu_.ctxDestroy(c.context);
      check(finished, "cuStreamSynchronize");
    });
  }

  void start(const gt::Sequence&) override {
    check(cu_.init(0), "cuInit");
    check(cu_.deviceGet(&device_, 0), "cuDeviceGet");
  }

  std::optional<std::string> leaks() override {
    std::size_t held = 0;
    for (const auto& [name, b] : buffers_)
      held += contexts_.count(b.context);
    if (contexts_.empty() && held == 0) return std::nullopt;
    return std::to_string(contexts_.size()) + " contexts and " + std::to_string(held) +
           " buffers still held";
  }

 private:
  void create(const std::string& name) {
    Context c;
    check(cu_.ctxCreate(&c.context, nullptr, 0, device_), "cuCtxCreate");
    const CUresult made = cu_.streamCreate(&c.stream, CU_STREAM_NON_BLOCKING);
    if (made != CUDA_SUCCESS) cu_.ctxDestroy(c.context);  // the context was never made
    check(made, "cuStreamCreate");
    contexts_[name] = c;
  }

  Api cu_;
  CUdevice device_ = 0;
  std::map<std::string, Context> contexts_;
  std::map<std::string, Buffer> buffers_;
};

}  // namespace

int main(int argc, char** argv) {
  return gt::main(argc, argv, "cuda-device-target 1.0",
                  [] { return std::make_unique<CudaDeviceTarget>(); });
}
