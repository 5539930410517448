// FakeLibcuda.cpp: a stand-in for libcuda.so.1, strict where the real driver is undefined, so
// that the cuda and cuda-async backends' bookkeeping runs on a machine without a GPU.
//
// It exports the versioned entry points renderer/cuda/CudaDriver.cpp resolves, on one device of
// host memory. Work enqueued on a stream runs only when the stream is waited for, queried or
// destroyed, so that a wait the backend leaves out shows: an upload reads its host source then
// (a source changed or freed after the enqueue, while the real driver might still read it, is
// caught by its checksum), a download writes its destination then, and a launch rasterizes on
// the host (renderer/Raster.h) into the buffers it names then, each of which must still be a live
// allocation of the size it needs. Handles are never handed out twice, so a stale one is always
// recognised. The stream-ordered allocator follows its documentation: cuMemPoolDestroy with
// allocations outstanding returns at once and the pool goes with the last of them;
// cuMemFreeAsync frees in stream order, and no call may name the address after it.
//
// Every use the documentation leaves undefined (a handle used after its destroy, a double free
// or destroy, an address used after its free, a launch or copy reaching freed memory, a host
// source changed before its copy ran) prints "fake libcuda: <call>: <what>" on stderr and
// aborts, a crash the harness sees as one. What the documentation answers with an error code
// gets that code. After the process's exit handlers begin, every call returns
// CUDA_ERROR_DEINITIALIZED, as the real driver does once it has torn itself down.
//
// FAKE_LIBCUDA_TRACE=1 traces every call's name on stderr. Thread-safe: one lock around every call.
// Not a model of timing, concurrency between streams or device faults.
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "renderer/Raster.h"
#include "renderer/cuda/RasterKernel.h"

namespace {

using gpufuzz::cuda::RasterParams;

[[noreturn]] void undefined(const char* call, const std::string& what) {
  std::fprintf(stderr, "fake libcuda: %s: %s\n", call, what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

/// FNV-1a of a host range, to see that an upload's source was left alone until the copy ran.
uint64_t checksum(const std::byte* data, size_t bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) {
    h = (h ^ static_cast<uint64_t>(data[i])) * 1099511628211ULL;
  }
  return h;
}

struct Context {
  bool primary = false;
  bool live = true;
};

struct Stream {
  uint64_t context = 0;
  bool live = true;
  std::deque<std::function<void()>> work;
};

struct Pool {
  bool destroyed = false;  // by cuMemPoolDestroy; gone once `outstanding` is 0
  uint64_t outstanding = 0;
};

struct Allocation {
  std::unique_ptr<std::byte[]> memory;
  size_t bytes = 0;
  uint64_t pool = 0;        // 0: cuMemAlloc in `context`
  uint64_t context = 0;     // cuMemAlloc's context
  bool freeQueued = false;  // cuMemFreeAsync was called; no call may name it again
};

struct Module {
  bool loaded = true;
};

struct Function {
  uint64_t module = 0;
  bool raster = false;  // the raster kernel, which a launch runs; any other does nothing
};

constexpr size_t kTotalBytes = size_t{8} << 30;
constexpr uint64_t kPrimary = 1;

/// The whole driver's state. Handles are the ids of these maps, cast to the handle types; ids
/// count up and are never reused.
struct Driver {
  std::recursive_mutex lock;
  bool initialised = false;
  bool deinitialised = false;
  uint64_t nextId = 2;  // 1 is the primary context
  std::map<uint64_t, Context> contexts{{kPrimary, Context{true, true}}};
  std::map<uint64_t, Stream> streams;
  std::map<uint64_t, Pool> pools;
  std::map<uint64_t, Module> modules;
  std::map<uint64_t, Function> functions;
  std::map<CUdeviceptr, Allocation> allocations;
  size_t bytesInUse = 0;
};

Driver& driver() {
  static Driver* d = new Driver;  // never destroyed: exit handlers may still call in
  return *d;
}

thread_local std::vector<uint64_t> contextStack;

template <typename Handle>
uint64_t idOf(Handle handle) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(handle));
}
template <typename Handle>
Handle handleOf(uint64_t id) {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(id));
}

/// FAKE_LIBCUDA_TRACE set (to anything): every call's name on stderr, in order.
bool tracing() {
  static const bool on = std::getenv("FAKE_LIBCUDA_TRACE") != nullptr;
  return on;
}

/// Entry: the lock, the trace, and CUDA_ERROR_NOT_INITIALIZED / _DEINITIALIZED where the driver
/// is not up.
#define FAKE_ENTER(call, needsInit)                                       \
  Driver& d = driver();                                                   \
  const std::lock_guard guard(d.lock);                                    \
  if (tracing()) std::fprintf(stderr, "fake libcuda: trace: %s\n", call); \
  if (d.deinitialised) return CUDA_ERROR_DEINITIALIZED;                   \
  if ((needsInit) && !d.initialised) return CUDA_ERROR_NOT_INITIALIZED

Stream& liveStream(Driver& d, CUstream handle, const char* call) {
  if (handle == nullptr) undefined(call, "the legacy default stream, which no backend may use");
  auto it = d.streams.find(idOf(handle));
  if (it == d.streams.end()) undefined(call, "unknown stream " + hex(idOf(handle)));
  if (!it->second.live) {
    undefined(call, "stream " + hex(idOf(handle)) + " used after its cuStreamDestroy");
  }
  if (!d.contexts.at(it->second.context).live) {
    undefined(call, "stream " + hex(idOf(handle)) + " of a destroyed context");
  }
  return it->second;
}

bool currentIsLive(const Driver& d) {
  if (contextStack.empty()) return false;
  auto it = d.contexts.find(contextStack.back());
  return it != d.contexts.end() && it->second.live;
}

/// The allocation holding [address, address + bytes), checked to be live and not being freed.
Allocation& liveRange(Driver& d, CUdeviceptr address, size_t bytes, const char* call,
                      const char* role) {
  auto it = d.allocations.upper_bound(address);
  if (it == d.allocations.begin()) {
    undefined(call, std::string(role) + " " + hex(address) + " is no live allocation");
  }
  --it;
  Allocation& a = it->second;
  const uint64_t offset = address - it->first;
  if (offset >= a.bytes && !(offset == 0 && bytes == 0)) {
    undefined(call, std::string(role) + " " + hex(address) + " is no live allocation");
  }
  if (bytes > a.bytes - offset) {
    undefined(call, std::string(role) + " " + hex(address) + " needs " + std::to_string(bytes) +
                        " bytes, its allocation has " + std::to_string(a.bytes - offset));
  }
  return a;
}

Allocation& enqueuedRange(Driver& d, CUdeviceptr address, size_t bytes, const char* call,
                          const char* role) {
  Allocation& a = liveRange(d, address, bytes, call, role);
  if (a.freeQueued) {
    undefined(call, std::string(role) + " " + hex(address) + " named after its cuMemFreeAsync");
  }
  return a;
}

void release(Driver& d, CUdeviceptr address) {
  auto it = d.allocations.find(address);
  const Allocation& a = it->second;
  d.bytesInUse -= a.bytes;
  if (a.pool != 0) {
    Pool& pool = d.pools.at(a.pool);
    --pool.outstanding;
  }
  d.allocations.erase(it);
}

/// Runs what `stream` holds, in order. Work may not enqueue more.
void drain(Stream& stream) {
  while (!stream.work.empty()) {
    const std::function<void()> next = std::move(stream.work.front());
    stream.work.pop_front();
    next();
  }
}

void deinitialise() {
  Driver& d = driver();
  const std::lock_guard guard(d.lock);
  d.deinitialised = true;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int flags) {
  FAKE_ENTER("cuInit", false);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!d.initialised) std::atexit(deinitialise);
  d.initialised = true;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  static const std::map<CUresult, const char*> names = {
      {CUDA_SUCCESS, "CUDA_SUCCESS"},
      {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
      {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY"},
      {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
      {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED"},
      {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
      {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE"},
      {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE"},
      {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT"},
      {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
      {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
      {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY"},
      {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
  };
  auto it = names.find(error);
  if (it == names.end() || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = it->second;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  FAKE_ENTER("cuDeviceGetCount", true);
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER("cuDeviceGet", true);
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  FAKE_ENTER("cuDeviceGetName", true);
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || length < 1) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(length), "%s", "fake libcuda device");
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain", true);
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  *context = handleOf<CUcontext>(kPrimary);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext* context, CUctxCreateParams* /*params*/, unsigned int flags,
                        CUdevice device) {
  FAKE_ENTER("cuCtxCreate_v4", true);
  if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t id = d.nextId++;
  d.contexts.emplace(id, Context{});
  contextStack.push_back(id);
  *context = handleOf<CUcontext>(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext handle) {
  FAKE_ENTER("cuCtxDestroy_v2", true);
  const uint64_t id = idOf(handle);
  auto it = d.contexts.find(id);
  if (it == d.contexts.end()) undefined("cuCtxDestroy", "unknown context " + hex(id));
  if (it->second.primary) undefined("cuCtxDestroy", "the primary context");
  if (!it->second.live) undefined("cuCtxDestroy", "context " + hex(id) + " destroyed twice");
  it->second.live = false;
  for (auto& [sid, stream] : d.streams) {
    if (stream.context == id && stream.live) {
      stream.work.clear();
      stream.live = false;
    }
  }
  for (auto a = d.allocations.begin(); a != d.allocations.end();) {
    auto next = std::next(a);
    if (a->second.pool == 0 && a->second.context == id) release(d, a->first);
    a = next;
  }
  std::erase(contextStack, id);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext handle) {
  FAKE_ENTER("cuCtxSetCurrent", true);
  const uint64_t id = idOf(handle);
  if (id != 0) {
    auto it = d.contexts.find(id);
    if (it == d.contexts.end() || !it->second.live) return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!contextStack.empty()) contextStack.pop_back();
  if (id != 0) contextStack.push_back(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* popped) {
  FAKE_ENTER("cuCtxPopCurrent_v2", true);
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (popped != nullptr) *popped = handleOf<CUcontext>(contextStack.back());
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate", true);
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = d.nextId++;
  d.streams[id].context = contextStack.back();
  *stream = handleOf<CUstream>(id);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream handle) {
  FAKE_ENTER("cuStreamDestroy_v2", true);
  Stream& stream = liveStream(d, handle, "cuStreamDestroy");
  // "The resources associated with the stream are released once the device has completed all
  // work in it": the work still runs.
  drain(stream);
  stream.live = false;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream handle) {
  FAKE_ENTER("cuStreamSynchronize", true);
  drain(liveStream(d, handle, "cuStreamSynchronize"));
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream handle) {
  FAKE_ENTER("cuStreamQuery", true);
  // The device is infinitely fast once asked: what is enqueued is done.
  drain(liveStream(d, handle, "cuStreamQuery"));
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  FAKE_ENTER("cuMemGetInfo_v2", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  *free = kTotalBytes - d.bytesInUse;
  *total = kTotalBytes;
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace {

CUresult allocate(Driver& d, CUdeviceptr* address, size_t bytes, uint64_t pool, uint64_t context) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kTotalBytes - d.bytesInUse) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.memory.reset(new std::byte[bytes]);  // never touched until used: large ones cost nothing
  a.bytes = bytes;
  a.pool = pool;
  a.context = context;
  const auto base = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(a.memory.get()));
  d.bytesInUse += bytes;
  d.allocations.emplace(base, std::move(a));
  *address = base;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* address, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  return allocate(d, address, bytes, 0, contextStack.back());
}

CUresult cuMemFree_v2(CUdeviceptr address) {
  FAKE_ENTER("cuMemFree_v2", true);
  auto it = d.allocations.find(address);
  // What the real driver answers for an address it does not know (one freed with its context).
  if (it == d.allocations.end() || it->second.pool != 0) return CUDA_ERROR_INVALID_VALUE;
  release(d, address);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  FAKE_ENTER("cuMemPoolCreate", true);
  if (pool == nullptr || props == nullptr || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE || props->location.id != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t id = d.nextId++;
  d.pools.emplace(id, Pool{});
  *pool = handleOf<CUmemoryPool>(id);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool handle) {
  FAKE_ENTER("cuMemPoolDestroy", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end()) undefined("cuMemPoolDestroy", "unknown pool " + hex(idOf(handle)));
  if (it->second.destroyed) {
    undefined("cuMemPoolDestroy", "pool " + hex(idOf(handle)) + " destroyed twice");
  }
  // With allocations outstanding it returns at once; the pool goes with the last of them.
  it->second.destroyed = true;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t bytes, CUmemoryPool handle,
                                 CUstream stream) {
  FAKE_ENTER("cuMemAllocFromPoolAsync", true);
  liveStream(d, stream, "cuMemAllocFromPoolAsync");
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end()) {
    undefined("cuMemAllocFromPoolAsync", "unknown pool " + hex(idOf(handle)));
  }
  if (it->second.destroyed) {
    undefined("cuMemAllocFromPoolAsync", "pool " + hex(idOf(handle)) + " used after its destroy");
  }
  const CUresult result = allocate(d, address, bytes, it->first, 0);
  if (result == CUDA_SUCCESS) ++it->second.outstanding;
  return result;
}

CUresult cuMemFreeAsync(CUdeviceptr address, CUstream handle) {
  FAKE_ENTER("cuMemFreeAsync", true);
  Stream& stream = liveStream(d, handle, "cuMemFreeAsync");
  auto it = d.allocations.find(address);
  if (it == d.allocations.end()) {
    undefined("cuMemFreeAsync", hex(address) + " is no live allocation (freed twice?)");
  }
  if (it->second.pool == 0) undefined("cuMemFreeAsync", hex(address) + " is no pool's");
  if (it->second.freeQueued) undefined("cuMemFreeAsync", hex(address) + " freed twice");
  it->second.freeQueued = true;
  stream.work.push_back([&d, address] { release(d, address); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyHtoDAsync_v2", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyHtoDAsync");
  enqueuedRange(d, dst, bytes, "cuMemcpyHtoDAsync", "destination");
  const auto* from = static_cast<const std::byte*>(src);
  const uint64_t sum = checksum(from, bytes);
  stream.work.push_back([&d, dst, from, bytes, sum] {
    liveRange(d, dst, bytes, "cuMemcpyHtoDAsync (when it ran)", "destination");
    if (checksum(from, bytes) != sum) {
      undefined("cuMemcpyHtoDAsync (when it ran)",
                "its host source was changed or freed before the copy ran");
    }
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(dst)), from, bytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyDtoHAsync_v2", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyDtoHAsync");
  enqueuedRange(d, src, bytes, "cuMemcpyDtoHAsync", "source");
  stream.work.push_back([&d, dst, src, bytes] {
    liveRange(d, src, bytes, "cuMemcpyDtoHAsync (when it ran)", "source");
    std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(src)), bytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  FAKE_ENTER("cuModuleLoadData", true);
  if (image == nullptr) return CUDA_ERROR_INVALID_IMAGE;
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = d.nextId++;
  d.modules.emplace(id, Module{});
  *module = handleOf<CUmodule>(id);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  FAKE_ENTER("cuModuleGetFunction", true);
  auto it = d.modules.find(idOf(module));
  if (it == d.modules.end() || !it->second.loaded) {
    undefined("cuModuleGetFunction", "module " + hex(idOf(module)) + " is not loaded");
  }
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t id = d.nextId++;
  d.functions.emplace(
      id, Function{it->first, std::strcmp(name, gpufuzz::cuda::kRasterKernelName) == 0});
  *function = handleOf<CUfunction>(id);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule module) {
  FAKE_ENTER("cuModuleUnload", true);
  auto it = d.modules.find(idOf(module));
  if (it == d.modules.end()) undefined("cuModuleUnload", "unknown module " + hex(idOf(module)));
  if (!it->second.loaded) undefined("cuModuleUnload", "module unloaded twice");
  it->second.loaded = false;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX, unsigned int gridY,
                        unsigned int gridZ, unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int /*sharedBytes*/, CUstream handle,
                        void** params, void** extra) {
  FAKE_ENTER("cuLaunchKernel", true);
  Stream& stream = liveStream(d, handle, "cuLaunchKernel");
  auto f = d.functions.find(idOf(function));
  if (f == d.functions.end()) undefined("cuLaunchKernel", "unknown function");
  if (!d.modules.at(f->second.module).loaded) {
    undefined("cuLaunchKernel", "function of an unloaded module");
  }
  if (!f->second.raster) return CUDA_SUCCESS;
  if (params == nullptr || extra != nullptr || gridX == 0 || gridY == 0 || gridZ != 1 ||
      blockZ != 1) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  RasterParams p{};
  std::memcpy(&p, params[0], sizeof p);  // parameters are copied at the launch
  if (uint64_t{gridX} * blockX < p.width || uint64_t{gridY} * blockY < p.height) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const size_t pixelBytes = size_t{p.width} * p.height * 4;
  const size_t texelBytes = size_t{p.textureSize} * p.textureSize * 4;
  const auto check = [&d, p, pixelBytes, texelBytes](const char* call, bool enqueueing) {
    const auto range = enqueueing ? enqueuedRange : liveRange;
    range(d, p.framebuffer, pixelBytes, call, "framebuffer");
    range(d, p.triangles, size_t{p.triangleCount} * sizeof(gpufuzz::raster::Triangle), call,
          "triangles");
    for (uint32_t i = 0; i < p.textureCount; ++i)
      range(d, p.textures[i], texelBytes, call, "texture");
  };
  check("cuLaunchKernel", true);
  stream.work.push_back([p, check] {
    check("cuLaunchKernel (when it ran)", false);
    const auto at = [](uint64_t address) {
      return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(address));
    };
    std::vector<uint32_t> image(size_t{p.width} * p.height);
    std::memcpy(image.data(), at(p.framebuffer), image.size() * 4);
    std::vector<gpufuzz::raster::Triangle> triangles(p.triangleCount);
    std::memcpy(triangles.data(), at(p.triangles),
                triangles.size() * sizeof(gpufuzz::raster::Triangle));
    const auto sample = [&](uint32_t texture, uint32_t x, uint32_t y) {
      uint32_t value = 0;
      std::memcpy(&value, at(p.textures[texture]) + (uint64_t{y} * p.textureSize + x) * 4, 4);
      return value;
    };
    gpufuzz::raster::rasterizeHost(image.data(), p.width, p.height, triangles.data(),
                                   p.triangleCount, p.textureCount, p.textureSize, sample);
    for (uint32_t& pixel : image)
      pixel ^= p.corruptXor;
    std::memcpy(at(p.framebuffer), image.data(), image.size() * 4);
  });
  return CUDA_SUCCESS;
}

}  // extern "C"
