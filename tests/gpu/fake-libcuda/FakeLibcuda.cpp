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
// The cuda-driver model's entry points (renderer/cuda/CudaDriverExecutor.h) follow the same rules:
// events capture a point of their stream's queue, cuStreamWaitEvent runs the waited-for work first,
// host functions run in stream order, a capture records a stream's work as a graph whose launches
// replay it, and virtual memory maps host blocks at addresses of a range of its own. An address is
// resolved when the work runs: a freed allocation, an unmapped range or pinned host memory freed
// before then aborts.
//
// Devices: FAKE_LIBCUDA_DEVICES (1 to 16, default 1) devices, of which CUDA_VISIBLE_DEVICES leaves
// those it lists, as the real driver does: ordinals or UUIDs ("GPU-" and a prefix of one), comma-
// separated, renumbered 0..n-1 in the listed order; the list ends at its first entry that names no
// device or one named before. Every context, stream, pool, allocation and mapping belongs to one
// device. Work on a stream may touch memory of another device only where access was given:
// cuCtxEnablePeerAccess for cuMemAlloc's memory, cuMemPoolSetAccess for a pool's, cuMemSetAccess
// for a mapping's; other cross-device access aborts. cuMemcpyPeer and cuMemcpyPeerAsync copy
// between devices without access, from and to memory of the contexts they name. Any two devices
// can access each other (cuDeviceCanAccessPeer); a device and itself cannot.
//
// FAKE_LIBCUDA_TRACE=1 traces every call's name on stderr (an absolute path: appends to that file).
// Thread-safe: one lock around every call. FAKE_LIBCUDA_PLANT plants a fault, so that tests see the
// executor catch it:
//   early-return  cuStreamSynchronize, cuEventSynchronize and cuCtxSynchronize return without
//                 running the work; cuStreamQuery and cuEventQuery then say CUDA_ERROR_NOT_READY
//   memset-plus-one  cuMemsetD8Async writes each byte one higher than asked
//   pool-teardown-crash  cuMemPoolDestroy with allocations outstanding dies of SIGSEGV in a
//                 function of its own, as NVIDIA's driver 580 does (corpus/runtimes/nvidia-580)
//   pool-teardown-crash-aged  the same, but in another function of its own once the process
//                 has made more than kAgedAfterPools pools: where a driver dies may depend on
//                 what the process did before, as a heap's layout does
//   pool-teardown-crash-libc  the same as pool-teardown-crash, but a process that made an odd
//                 number of pools dies in libc's pthread_spin_lock, called from that function:
//                 NVIDIA's driver 580 dies in pthread_spin_lock or free under cuMemPoolDestroy too
//   pool-teardown-crash-spin  the same as pool-teardown-crash, but a process that made an even
//                 number of pools spins in another function of its own instead: for ever, or
//                 or for 600 ms where that number is not a multiple of four. One broken call that
//                 crashes, spins or is slow by what the process did before
//   pool-race     a race inside the driver: cuMemAllocFromPoolAsync works for kRaceWindowUs
//                 outside the driver's lock, and cuMemPoolDestroy made meanwhile from another
//                 thread dies of SIGSEGV in a function of its own. It fires only when the two
//                 calls overlap inside the driver, never from one thread
// FAKE_LIBCUDA_SYNC_MS=N: cuStreamSynchronize waits N ms for the device outside the driver's
// lock, as a real wait does, so that threads' waits overlap.
// Not a model of timing, concurrency between streams or device faults.
#include <cuda.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
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
  int device = 0;
  /// Contexts whose memory this one may access (cuCtxEnablePeerAccess).
  std::set<uint64_t> peers;
};

struct Stream {
  uint64_t context = 0;
  bool live = true;
  std::deque<std::function<void()>> work;
  int priority = 0;
  /// Between cuStreamBeginCapture and cuStreamEndCapture: work goes to `captured`.
  bool capturing = false;
  std::vector<std::function<void()>> captured;
  bool capturedAllocations = false;
  std::vector<CUdeviceptr> graphAllocations;
  /// Reset with the primary context by its last cuDevicePrimaryCtxRelease.
  bool reset = false;
};

struct Event {
  uint64_t context = 0;
  bool live = true;
  uint64_t stream = 0;     // of the last record; 0 before the first
  uint64_t recorded = 0;   // records so far
  uint64_t completed = 0;  // the last record whose point of the queue has run
};

struct Graph {
  bool live = true;
  bool allocationNodes = false;
  int liveExecs = 0;
  int launchesInFlight = 0;
  std::shared_ptr<std::vector<std::function<void()>>> nodes;
  std::vector<CUdeviceptr> allocations;  // made by its allocation nodes, kept for its life
};

struct GraphExec {
  uint64_t graph = 0;
  bool live = true;
};

struct Pinned {
  size_t bytes = 0;
  uint64_t id = 0;
  uint64_t context = 0;
};

struct Reservation {
  size_t bytes = 0;
};

struct Block {
  std::unique_ptr<std::byte[]> memory;
  size_t bytes = 0;
  bool handleLive = true;  // until cuMemRelease
  int mappings = 0;
};

struct Mapping {
  size_t bytes = 0;
  uint64_t block = 0;
  std::set<int> devices;  // given read-write access by cuMemSetAccess
};

struct Pool {
  bool destroyed = false;  // by cuMemPoolDestroy; gone once `outstanding` is 0
  uint64_t outstanding = 0;
  cuuint64_t releaseThreshold = 0;
  int device = 0;
  std::set<int> access;  // other devices given read-write access (cuMemPoolSetAccess)
};

struct Allocation {
  std::unique_ptr<std::byte[]> memory;
  size_t bytes = 0;
  uint64_t pool = 0;        // 0: cuMemAlloc in `context`
  uint64_t context = 0;     // cuMemAlloc's context
  int device = 0;           // its pool's, or its context's
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
constexpr int kMostDevices = 16;
constexpr size_t kGranularity = size_t{2} << 20;
/// Where reserved address ranges begin: far from any host pointer (the allocations' addresses).
constexpr CUdeviceptr kVirtualBase = 0x200000000000ULL;
constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

/// Physical device `physical`'s UUID (cuDeviceGetUuid): 0xfa bytes, the ordinal last.
CUuuid fakeUuid(int physical) {
  CUuuid uuid{};
  std::memset(uuid.bytes, 0xfa, sizeof uuid.bytes);
  uuid.bytes[15] = static_cast<char>(physical);
  return uuid;
}

/// The UUID as CUDA_VISIBLE_DEVICES and nvidia-smi write it: GPU-8-4-4-4-12 hex digits.
std::string fakeUuidText(int physical) {
  const CUuuid uuid = fakeUuid(physical);
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += byte;
  }
  return text;
}

/// The physical devices CUDA_VISIBLE_DEVICES leaves of `count`, in its order (see the top).
std::vector<int> visibleDevices(int count, const char* list) {
  std::vector<int> visible;
  if (list == nullptr) {
    for (int i = 0; i < count; ++i)
      visible.push_back(i);
    return visible;
  }
  std::string rest = list;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string entry = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    entry.erase(0, entry.find_first_not_of(' '));
    entry.erase(entry.find_last_not_of(' ') + 1);
    int device = -1;
    if (entry.starts_with("GPU-") && entry.size() > 4) {
      for (int i = 0; i < count; ++i) {
        if (fakeUuidText(i).starts_with(entry)) device = i;
      }
    } else if (!entry.empty() && entry.size() < 4 &&
               entry.find_first_not_of("0123456789") == std::string::npos) {
      device = std::stoi(entry);
    }
    if (device < 0 || device >= count ||
        std::find(visible.begin(), visible.end(), device) != visible.end()) {
      break;
    }
    visible.push_back(device);
  }
  return visible;
}

/// The whole driver's state. Handles are the ids of these maps, cast to the handle types; ids
/// count up and are never reused.
struct Driver {
  Driver() {
    const char* count = std::getenv("FAKE_LIBCUDA_DEVICES");
    const int devices = count != nullptr ? std::atoi(count) : 1;
    if (devices < 1 || devices > kMostDevices) {
      undefined("FAKE_LIBCUDA_DEVICES", "must be 1 to " + std::to_string(kMostDevices));
    }
    physical = visibleDevices(devices, std::getenv("CUDA_VISIBLE_DEVICES"));
    for (size_t i = 0; i < physical.size(); ++i) {
      Context primary;
      primary.primary = true;
      primary.device = static_cast<int>(i);
      primaries.push_back(nextId);
      contexts.emplace(nextId++, std::move(primary));
    }
    primaryRetains.assign(physical.size(), 0);
  }
  std::recursive_mutex lock;
  bool initialised = false;
  bool deinitialised = false;
  uint64_t nextId = 1;
  /// The visible devices' physical ordinals, by CUdevice.
  std::vector<int> physical;
  /// Each visible device's primary context, by CUdevice.
  std::vector<uint64_t> primaries;
  std::vector<int> primaryRetains;
  std::map<uint64_t, Context> contexts;
  std::map<uint64_t, Stream> streams;
  std::map<uint64_t, Pool> pools;
  std::map<uint64_t, Module> modules;
  std::map<uint64_t, Function> functions;
  std::map<CUdeviceptr, Allocation> allocations;
  size_t bytesInUse = 0;
  std::map<uint64_t, Event> events;
  std::map<uint64_t, Graph> graphs;
  std::map<uint64_t, GraphExec> execs;
  std::map<const std::byte*, Pinned> pinned;  // by base address, live ones only
  std::set<uint64_t> livePinned;              // ids of the live pinned allocations
  /// Copies to the host that ran into each pinned allocation, by id: an upload's source may
  /// change after its enqueue when such a copy ordered before it ran.
  std::map<uint64_t, uint64_t> pinnedDeviceWrites;
  uint64_t defaultPool = 0;  // cuMemAllocAsync's, made by cuInit
  CUdeviceptr nextVirtual = kVirtualBase;
  std::map<CUdeviceptr, Reservation> reservations;
  std::map<uint64_t, Block> blocks;
  std::map<CUdeviceptr, Mapping> mappings;
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

/// FAKE_LIBCUDA_TRACE set (to anything): every call's name on stderr, in order; set to an
/// absolute path: appended to that file instead, so that a campaign's children can be traced.
bool tracing() {
  static const bool on = std::getenv("FAKE_LIBCUDA_TRACE") != nullptr;
  return on;
}
void trace(const char* call) {
  static const char* path = std::getenv("FAKE_LIBCUDA_TRACE");
  if (path[0] != '/') {
    std::fprintf(stderr, "fake libcuda: trace: %s\n", call);
    return;
  }
  if (FILE* file = std::fopen(path, "a")) {
    std::fprintf(file, "fake libcuda: trace: %s\n", call);
    std::fclose(file);
  }
}

/// Entry: the lock, the trace, and CUDA_ERROR_NOT_INITIALIZED / _DEINITIALIZED where the driver
/// is not up.
#define FAKE_ENTER(call, needsInit)                     \
  Driver& d = driver();                                 \
  const std::lock_guard guard(d.lock);                  \
  if (tracing()) trace(call);                           \
  if (d.deinitialised) return CUDA_ERROR_DEINITIALIZED; \
  if ((needsInit) && !d.initialised) return CUDA_ERROR_NOT_INITIALIZED

Stream& liveStream(Driver& d, CUstream handle, const char* call) {
  if (handle == nullptr) undefined(call, "the legacy default stream, which no backend may use");
  auto it = d.streams.find(idOf(handle));
  if (it == d.streams.end()) undefined(call, "unknown stream " + hex(idOf(handle)));
  if (it->second.reset) {
    undefined(call, "stream " + hex(idOf(handle)) +
                        " of a primary context reset by its last cuDevicePrimaryCtxRelease");
  }
  if (!it->second.live) {
    undefined(call, "stream " + hex(idOf(handle)) + " used after its cuStreamDestroy");
  }
  if (!d.contexts.at(it->second.context).live) {
    undefined(call, "stream " + hex(idOf(handle)) + " of a destroyed context");
  }
  return it->second;
}

bool validDevice(const Driver& d, CUdevice device) {
  return device >= 0 && static_cast<size_t>(device) < d.physical.size();
}

/// A context handle passed as a peer: its id, or 0 for one that is no context. A destroyed one
/// aborts: its handle may not be passed again.
uint64_t peerContext(const Driver& d, CUcontext handle, const char* call) {
  auto it = d.contexts.find(idOf(handle));
  if (it == d.contexts.end()) return 0;
  if (!it->second.live) undefined(call, "context " + hex(it->first) + " used after its destroy");
  return it->first;
}

/// Peer access from and to context `id` ends with it (a destroy, a primary context's reset).
void forgetPeers(Driver& d, uint64_t id) {
  d.contexts.at(id).peers.clear();
  for (auto& [other, context] : d.contexts)
    context.peers.erase(id);
}

/// Aborts unless work on `stream` may touch the memory at `address`: memory of the stream's own
/// device, or of another one that gave the stream's device (or context) access (see the top).
void checkReach(Driver& d, CUdeviceptr address, const Stream& stream, const char* call,
                const char* role) {
  const Context& context = d.contexts.at(stream.context);
  const std::string where = std::string(role) + " " + hex(address);
  if (address >= kVirtualBase && address < d.nextVirtual) {
    auto it = d.mappings.upper_bound(address);
    if (it == d.mappings.begin()) return;  // resolve() says what is wrong
    if (!std::prev(it)->second.devices.contains(context.device)) {
      undefined(call, where + " is mapped without access for device " +
                          std::to_string(context.device) + " (cuMemSetAccess)");
    }
    return;
  }
  auto it = d.allocations.upper_bound(address);
  if (it == d.allocations.begin()) return;
  const Allocation& a = std::prev(it)->second;
  if (a.device == context.device) return;
  if (a.pool != 0 && d.pools.at(a.pool).access.contains(context.device)) return;
  if (a.pool == 0 && context.peers.contains(a.context)) return;
  undefined(call, where + " is memory of device " + std::to_string(a.device) + ", which device " +
                      std::to_string(context.device) +
                      (a.pool != 0 ? " was given no access to (cuMemPoolSetAccess)"
                                   : " has no peer access to (cuCtxEnablePeerAccess)"));
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

/// Enqueues `work` on `stream`, or records it into the stream's capture.
void enqueue(Stream& stream, std::function<void()> work) {
  if (stream.capturing) {
    stream.captured.push_back(std::move(work));
  } else {
    stream.work.push_back(std::move(work));
  }
}

/// FAKE_LIBCUDA_PLANT's value, or empty.
const std::string& plant() {
  static const std::string value = [] {
    const char* v = std::getenv("FAKE_LIBCUDA_PLANT");
    return std::string(v != nullptr ? v : "");
  }();
  return value;
}
bool earlyReturn() {
  return plant() == "early-return";
}

/// pool-race: threads inside cuMemAllocFromPoolAsync's work outside the lock, and how long it
/// takes: long enough for a destroy released together with it to land inside.
std::atomic<int> gAllocating{0};
constexpr int kRaceWindowUs = 4000;
/// pool-race: how long cuMemPoolDestroy's walk before its lock lasts, watching for allocations.
/// Windows on both sides keep the race reproducible on a loaded 2-core machine, where a destroy
/// that looked once, 200 us in, met it too rarely to be confirmed.
constexpr int kTeardownWalkUs = kRaceWindowUs / 2;

/// pool-race: the pool's free list, which an allocation in flight is walking, is torn down.
[[gnu::noipa]] void destroyPoolUnderAllocation(volatile uint64_t* freeList) {
  *freeList = 0;
}

/// pool-teardown-crash: a real invalid access, two calls deep in the stand-in, so that the
/// frames a crash report gives are its own functions under cuMemPoolDestroy.
[[gnu::noipa]] void releasePoolBlocks(volatile uint64_t* blocks, pthread_spinlock_t* lock) {
  // pool-teardown-crash-libc: libc's crash on the pool's lock that is gone.
  if (lock != nullptr) pthread_spin_lock(lock);
  *blocks = 0;  // after the call, so that it is no tail call: this frame stays under libc's
}
[[gnu::noipa]] void tearDownPool(uint64_t outstanding, bool inLibc) {
  // The pool's block list is gone while allocations still point into it.
  releasePoolBlocks(
      outstanding > 0 ? nullptr : &outstanding,
      inLibc && outstanding > 0 ? reinterpret_cast<pthread_spinlock_t*>(16) : nullptr);
}

/// pool-teardown-crash-spin: the pool's lock is never released, so the call waits on it for ever.
[[gnu::noipa]] void spinOnPoolLock(const volatile uint64_t* held, bool forEver) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (*held != 0 && (forEver || std::chrono::steady_clock::now() < until)) {
  }
}

/// pool-teardown-crash-aged: a process with more pools made than this dies in releaseAgedPool, so
/// a process that ran several sequences dies elsewhere than a fresh one running one of them.
constexpr size_t kAgedAfterPools = 6;
[[gnu::noipa]] void releaseAgedPool(volatile uint64_t* blocks) {
  *blocks = 0;
}

/// The host memory behind [address, address + bytes): an allocation's own (its address is a host
/// pointer) or a mapped block's. Aborts where nothing accessible is there, or, while `enqueueing`,
/// where a free is already queued.
std::byte* resolve(Driver& d, CUdeviceptr address, size_t bytes, const char* call, const char* role,
                   bool enqueueing) {
  if (address < kVirtualBase || address >= d.nextVirtual) {
    Allocation& a = liveRange(d, address, bytes, call, role);
    if (enqueueing && a.freeQueued) {
      undefined(call, std::string(role) + " " + hex(address) + " named after its cuMemFreeAsync");
    }
    return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(address));
  }
  auto it = d.mappings.upper_bound(address);
  if (it == d.mappings.begin() || address - std::prev(it)->first >= std::prev(it)->second.bytes) {
    undefined(call, std::string(role) + " " + hex(address) + " is not mapped");
  }
  --it;
  const uint64_t offset = address - it->first;
  if (bytes > it->second.bytes - offset) {
    undefined(call, std::string(role) + " " + hex(address) + " runs past its mapping");
  }
  if (it->second.devices.empty()) {
    undefined(call, std::string(role) + " " + hex(address) + " is mapped without cuMemSetAccess");
  }
  return d.blocks.at(it->second.block).memory.get() + offset;
}

/// The id of the live pinned allocation holding [host, host + bytes), or 0 for pageable memory.
uint64_t pinnedId(const Driver& d, const void* host, size_t bytes) {
  const auto* at = static_cast<const std::byte*>(host);
  auto it = d.pinned.upper_bound(at);
  if (it == d.pinned.begin()) return 0;
  --it;
  if (at >= it->first + it->second.bytes) return 0;
  if (at + bytes > it->first + it->second.bytes) return 0;
  return it->second.id;
}

void checkPinned(const Driver& d, uint64_t id, const char* call) {
  if (id != 0 && !d.livePinned.contains(id)) {
    undefined(call, "its pinned host memory was freed before the copy ran");
  }
}

/// Runs `stream`'s work until record `record` of event `event` has run, or its queue is empty.
void drainUntil(Driver& d, Stream& stream, uint64_t event, uint64_t record) {
  while (!stream.work.empty() && d.events.at(event).completed < record) {
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
  if (d.physical.empty()) return CUDA_ERROR_NO_DEVICE;
  if (!d.initialised) {
    std::atexit(deinitialise);
    d.defaultPool = d.nextId++;
    d.pools.emplace(d.defaultPool, Pool{});
  }
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
      {CUDA_ERROR_CONTEXT_IS_DESTROYED, "CUDA_ERROR_CONTEXT_IS_DESTROYED"},
      {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED"},
      {CUDA_ERROR_NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED"},
      {CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED"},
      {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED"},
      {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED"},
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
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(d.physical.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_ENTER("cuDeviceGet", true);
  if (!validDevice(d, ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  FAKE_ENTER("cuDeviceGetName", true);
  if (!validDevice(d, device)) return CUDA_ERROR_INVALID_DEVICE;
  if (name == nullptr || length < 1) return CUDA_ERROR_INVALID_VALUE;
  // Physical device 0 keeps the name of the one-device stand-in; the others add their ordinal.
  const int physical = d.physical[static_cast<size_t>(device)];
  const std::string text =
      physical == 0 ? "fake libcuda device" : "fake libcuda device " + std::to_string(physical);
  std::snprintf(name, static_cast<size_t>(length), "%s", text.c_str());
  return CUDA_SUCCESS;
}

// cuda.h makes this cuDeviceGetUuid_v2, the symbol the driver exports.
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) {
  FAKE_ENTER("cuDeviceGetUuid_v2", true);
  if (!validDevice(d, device)) return CUDA_ERROR_INVALID_DEVICE;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *uuid = fakeUuid(d.physical[static_cast<size_t>(device)]);
  return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int* canAccess, CUdevice device, CUdevice peer) {
  FAKE_ENTER("cuDeviceCanAccessPeer", true);
  if (!validDevice(d, device) || !validDevice(d, peer)) return CUDA_ERROR_INVALID_DEVICE;
  if (canAccess == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccess = device != peer ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain", true);
  if (!validDevice(d, device)) return CUDA_ERROR_INVALID_DEVICE;
  ++d.primaryRetains[static_cast<size_t>(device)];
  *context = handleOf<CUcontext>(d.primaries[static_cast<size_t>(device)]);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease_v2", true);
  if (!validDevice(d, device)) return CUDA_ERROR_INVALID_DEVICE;
  int& retains = d.primaryRetains[static_cast<size_t>(device)];
  if (retains == 0) undefined("cuDevicePrimaryCtxRelease", "released more than retained");
  if (--retains > 0) return CUDA_SUCCESS;
  // The last release resets the context: what it held is gone, its peer access with it.
  const uint64_t primary = d.primaries[static_cast<size_t>(device)];
  for (auto& [id, stream] : d.streams) {
    if (stream.context == primary && stream.live) {
      stream.work.clear();
      stream.live = false;
      stream.reset = true;
    }
  }
  for (auto& [id, event] : d.events) {
    if (event.context == primary) event.live = false;
  }
  forgetPeers(d, primary);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext* context, CUctxCreateParams* /*params*/, unsigned int flags,
                        CUdevice device) {
  FAKE_ENTER("cuCtxCreate_v4", true);
  if (!validDevice(d, device)) return CUDA_ERROR_INVALID_DEVICE;
  if (flags != CU_CTX_SCHED_AUTO && flags != CU_CTX_SCHED_SPIN && flags != CU_CTX_SCHED_YIELD &&
      flags != CU_CTX_SCHED_BLOCKING_SYNC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t id = d.nextId++;
  Context created;
  created.device = device;
  d.contexts.emplace(id, std::move(created));
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
  for (auto& [eid, event] : d.events) {
    if (event.context == id) event.live = false;
  }
  // Pinned host memory goes with its context (cuCtxDestroy).
  std::erase_if(d.pinned, [&d, id](const auto& entry) {
    if (entry.second.context != id) return false;
    d.livePinned.erase(entry.second.id);
    return true;
  });
  forgetPeers(d, id);
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

CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  FAKE_ENTER("cuCtxEnablePeerAccess", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = peerContext(d, peer, "cuCtxEnablePeerAccess");
  Context& current = d.contexts.at(contextStack.back());
  if (id == 0 || id == contextStack.back()) return CUDA_ERROR_INVALID_CONTEXT;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (d.contexts.at(id).device == current.device) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!current.peers.insert(id).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  FAKE_ENTER("cuCtxDisablePeerAccess", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = peerContext(d, peer, "cuCtxDisablePeerAccess");
  if (id == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (d.contexts.at(contextStack.back()).peers.erase(id) == 0) {
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* popped) {
  FAKE_ENTER("cuCtxPopCurrent_v2", true);
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (popped != nullptr) *popped = handleOf<CUcontext>(contextStack.back());
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace {

CUresult createStream(Driver& d, CUstream* stream, unsigned int flags, int priority) {
  if (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = d.nextId++;
  d.streams[id].context = contextStack.back();
  // "Priorities outside the range ... are clamped".
  d.streams[id].priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
  *stream = handleOf<CUstream>(id);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* stream, unsigned int flags) {
  FAKE_ENTER("cuStreamCreate", true);
  return createStream(d, stream, flags, kLeastPriority);
}

CUresult cuStreamCreateWithPriority(CUstream* stream, unsigned int flags, int priority) {
  FAKE_ENTER("cuStreamCreateWithPriority", true);
  return createStream(d, stream, flags, priority);
}

CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  FAKE_ENTER("cuCtxGetStreamPriorityRange", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  if (least != nullptr) *least = kLeastPriority;
  if (greatest != nullptr) *greatest = kGreatestPriority;
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
  static const long syncMs = [] {
    const char* v = std::getenv("FAKE_LIBCUDA_SYNC_MS");
    return v != nullptr ? std::strtol(v, nullptr, 10) : 0L;
  }();
  if (syncMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(syncMs));
  FAKE_ENTER("cuStreamSynchronize", true);
  Stream& stream = liveStream(d, handle, "cuStreamSynchronize");
  if (stream.capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (earlyReturn()) return CUDA_SUCCESS;
  drain(stream);
  return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream handle) {
  FAKE_ENTER("cuStreamQuery", true);
  Stream& stream = liveStream(d, handle, "cuStreamQuery");
  if (stream.capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (earlyReturn()) return stream.work.empty() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  // The device is infinitely fast once asked: what is enqueued is done.
  drain(stream);
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

CUresult allocate(Driver& d, CUdeviceptr* address, size_t bytes, uint64_t pool, uint64_t context,
                  int device) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kTotalBytes - d.bytesInUse) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.memory.reset(new std::byte[bytes]);  // never touched until used: large ones cost nothing
  a.bytes = bytes;
  a.pool = pool;
  a.context = context;
  a.device = device;
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
  return allocate(d, address, bytes, 0, contextStack.back(),
                  d.contexts.at(contextStack.back()).device);
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
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!validDevice(d, props->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  const uint64_t id = d.nextId++;
  Pool made;
  made.device = props->location.id;
  d.pools.emplace(id, std::move(made));
  *pool = handleOf<CUmemoryPool>(id);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool handle) {
  if (plant() == "pool-race") {
    // The teardown's own walk before it takes the lock: an allocation inside meanwhile races it.
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(kTeardownWalkUs);
    do {
      if (gAllocating.load() > 0) destroyPoolUnderAllocation(nullptr);
      std::this_thread::sleep_for(std::chrono::microseconds(kTeardownWalkUs / 20));
    } while (std::chrono::steady_clock::now() < until);
    if (gAllocating.load() > 0) destroyPoolUnderAllocation(nullptr);
  }
  FAKE_ENTER("cuMemPoolDestroy", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end()) undefined("cuMemPoolDestroy", "unknown pool " + hex(idOf(handle)));
  if (it->second.destroyed) {
    undefined("cuMemPoolDestroy", "pool " + hex(idOf(handle)) + " destroyed twice");
  }
  const bool aged = plant() == "pool-teardown-crash-aged";
  if (aged && d.pools.size() > kAgedAfterPools) {
    uint64_t none = 0;
    releaseAgedPool(it->second.outstanding > 0 ? nullptr : &none);
  }
  const bool spins = plant() == "pool-teardown-crash-spin" && it->second.outstanding > 0 &&
                     d.pools.size() % 2 == 0;
  if (spins) {
    const uint64_t held = 1;
    spinOnPoolLock(&held, d.pools.size() % 4 == 0);
  }
  if (plant().starts_with("pool-teardown-crash") && !spins) {
    // pool-teardown-crash-libc: in a process that made an odd number of pools, it dies in libc.
    tearDownPool(it->second.outstanding,
                 plant() == "pool-teardown-crash-libc" && d.pools.size() % 2 == 1);
  }
  // With allocations outstanding it returns at once; the pool goes with the last of them.
  it->second.destroyed = true;
  return CUDA_SUCCESS;
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* address, size_t bytes, CUmemoryPool handle,
                                 CUstream stream) {
  if (plant() == "pool-race") {
    ++gAllocating;
    std::this_thread::sleep_for(std::chrono::microseconds(kRaceWindowUs));
    --gAllocating;
  }
  FAKE_ENTER("cuMemAllocFromPoolAsync", true);
  if (liveStream(d, stream, "cuMemAllocFromPoolAsync").capturing) {
    undefined("cuMemAllocFromPoolAsync", "captured (the fake captures cuMemAllocAsync only)");
  }
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end()) {
    undefined("cuMemAllocFromPoolAsync", "unknown pool " + hex(idOf(handle)));
  }
  if (it->second.destroyed) {
    undefined("cuMemAllocFromPoolAsync", "pool " + hex(idOf(handle)) + " used after its destroy");
  }
  const CUresult result = allocate(d, address, bytes, it->first, 0, it->second.device);
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
  if (stream.capturing) {
    // A free node: the allocation is the graph's, kept for the graph's life.
    if (std::find(stream.graphAllocations.begin(), stream.graphAllocations.end(), address) ==
        stream.graphAllocations.end()) {
      undefined("cuMemFreeAsync", hex(address) + " captured, but not allocated in the capture");
    }
    stream.captured.push_back([] {});
    return CUDA_SUCCESS;
  }
  it->second.freeQueued = true;
  stream.work.push_back([&d, address] { release(d, address); });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyHtoDAsync_v2", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyHtoDAsync");
  resolve(d, dst, bytes, "cuMemcpyHtoDAsync", "destination", true);
  checkReach(d, dst, stream, "cuMemcpyHtoDAsync", "destination");
  const auto* from = static_cast<const std::byte*>(src);
  const uint64_t sum = checksum(from, bytes);
  const uint64_t pinned = pinnedId(d, src, bytes);
  const uint64_t written = pinned != 0 ? d.pinnedDeviceWrites[pinned] : 0;
  enqueue(stream, [&d, dst, from, bytes, sum, pinned, written] {
    std::byte* to = resolve(d, dst, bytes, "cuMemcpyHtoDAsync (when it ran)", "destination", false);
    checkPinned(d, pinned, "cuMemcpyHtoDAsync (when it ran)");
    const bool deviceWrote = pinned != 0 && d.pinnedDeviceWrites[pinned] != written;
    if (!deviceWrote && checksum(from, bytes) != sum) {
      undefined("cuMemcpyHtoDAsync (when it ran)",
                "its host source was changed or freed before the copy ran");
    }
    std::memcpy(to, from, bytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyDtoHAsync_v2", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyDtoHAsync");
  resolve(d, src, bytes, "cuMemcpyDtoHAsync", "source", true);
  checkReach(d, src, stream, "cuMemcpyDtoHAsync", "source");
  const uint64_t pinned = pinnedId(d, dst, bytes);
  if (stream.capturing && pinned == 0) {
    undefined("cuMemcpyDtoHAsync", "captured into pageable host memory");
  }
  enqueue(stream, [&d, dst, src, bytes, pinned] {
    const std::byte* from =
        resolve(d, src, bytes, "cuMemcpyDtoHAsync (when it ran)", "source", false);
    checkPinned(d, pinned, "cuMemcpyDtoHAsync (when it ran)");
    std::memcpy(dst, from, bytes);
    if (pinned != 0) ++d.pinnedDeviceWrites[pinned];
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
  enqueue(stream, [p, check] {
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

// ---- What the cuda-driver model's executor calls besides ----------------------------------------

namespace {

Event& liveEvent(Driver& d, CUevent handle, const char* call) {
  auto it = d.events.find(idOf(handle));
  if (it == d.events.end()) undefined(call, "unknown event " + hex(idOf(handle)));
  if (!it->second.live) {
    undefined(call, "event " + hex(idOf(handle)) + " used after its destroy or its context's");
  }
  return it->second;
}

/// Runs the work up to the last record of `event`: the device is infinitely fast once asked.
void completeEvent(Driver& d, uint64_t id) {
  Event& event = d.events.at(id);
  if (event.completed >= event.recorded) return;
  auto stream = d.streams.find(event.stream);
  if (stream != d.streams.end()) drainUntil(d, stream->second, id, event.recorded);
}

Graph& liveGraph(Driver& d, CUgraph handle, const char* call) {
  auto it = d.graphs.find(idOf(handle));
  if (it == d.graphs.end()) undefined(call, "unknown graph " + hex(idOf(handle)));
  if (!it->second.live) undefined(call, "graph " + hex(idOf(handle)) + " used after its destroy");
  return it->second;
}

/// A graph's allocations go once it, its executable graphs and their launches are all gone.
void releaseGraphIfUnused(Driver& d, uint64_t id) {
  Graph& g = d.graphs.at(id);
  if (g.live || g.liveExecs > 0 || g.launchesInFlight > 0) return;
  for (const CUdeviceptr address : g.allocations) {
    Allocation& a = d.allocations.at(address);
    a.freeQueued = true;
    release(d, address);
  }
  g.allocations.clear();
}

}  // namespace

extern "C" {

CUresult cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize", true);
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  if (earlyReturn()) return CUDA_SUCCESS;
  const uint64_t context = contextStack.back();
  for (auto& [id, stream] : d.streams) {
    if (stream.context == context && stream.live) {
      if (stream.capturing) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      drain(stream);
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  FAKE_ENTER("cuEventCreate", true);
  if ((flags & ~static_cast<unsigned>(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                      CU_EVENT_INTERPROCESS)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  const uint64_t id = d.nextId++;
  d.events[id].context = contextStack.back();
  *event = handleOf<CUevent>(id);
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent handle, CUstream streamHandle) {
  FAKE_ENTER("cuEventRecord", true);
  Event& event = liveEvent(d, handle, "cuEventRecord");
  Stream& stream = liveStream(d, streamHandle, "cuEventRecord");
  if (stream.capturing) undefined("cuEventRecord", "captured (the fake does not capture events)");
  // "hEvent and hStream must be from the same context otherwise CUDA_ERROR_INVALID_HANDLE".
  if (event.context != stream.context) return CUDA_ERROR_INVALID_HANDLE;
  const uint64_t id = idOf(handle);
  const uint64_t record = ++event.recorded;
  event.stream = idOf(streamHandle);
  stream.work.push_back([&d, id, record] {
    Event& e = d.events.at(id);
    e.completed = std::max(e.completed, record);
  });
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent handle) {
  FAKE_ENTER("cuEventQuery", true);
  Event& event = liveEvent(d, handle, "cuEventQuery");
  if (earlyReturn()) {
    return event.completed >= event.recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  }
  completeEvent(d, idOf(handle));
  return event.completed >= event.recorded ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent handle) {
  FAKE_ENTER("cuEventSynchronize", true);
  Event& event = liveEvent(d, handle, "cuEventSynchronize");
  if (earlyReturn()) return CUDA_SUCCESS;
  completeEvent(d, idOf(handle));
  if (event.completed < event.recorded) {
    undefined("cuEventSynchronize",
              "its record can never complete (its stream's work was dropped)");
  }
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent handle) {
  FAKE_ENTER("cuEventDestroy_v2", true);
  Event& event = liveEvent(d, handle, "cuEventDestroy");
  // Destroying an event whose record is pending is allowed; the record still completes.
  event.live = false;
  return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream streamHandle, CUevent handle, unsigned int flags) {
  FAKE_ENTER("cuStreamWaitEvent", true);
  Stream& stream = liveStream(d, streamHandle, "cuStreamWaitEvent");
  Event& event = liveEvent(d, handle, "cuStreamWaitEvent");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (stream.capturing) undefined("cuStreamWaitEvent", "captured (the fake does not capture it)");
  // The event may be of another context. The wait is for its record as of now.
  const uint64_t id = idOf(handle);
  const uint64_t record = event.recorded;
  stream.work.push_back([&d, id, record] {
    Event& e = d.events.at(id);
    if (e.completed >= record) return;
    auto other = d.streams.find(e.stream);
    if (other != d.streams.end()) drainUntil(d, other->second, id, record);
    if (d.events.at(id).completed < record) {
      undefined("cuStreamWaitEvent (when it ran)", "the event's record can never complete");
    }
  });
  return CUDA_SUCCESS;
}

CUresult cuLaunchHostFunc(CUstream handle, CUhostFn fn, void* data) {
  FAKE_ENTER("cuLaunchHostFunc", true);
  Stream& stream = liveStream(d, handle, "cuLaunchHostFunc");
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  enqueue(stream, [fn, data] { fn(data); });
  return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool handle, size_t /*keep*/) {
  FAKE_ENTER("cuMemPoolTrimTo", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end() || it->second.destroyed) {
    undefined("cuMemPoolTrimTo", "pool " + hex(idOf(handle)) + " unknown or destroyed");
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void* value) {
  FAKE_ENTER("cuMemPoolSetAttribute", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end() || it->second.destroyed) {
    undefined("cuMemPoolSetAttribute", "pool " + hex(idOf(handle)) + " unknown or destroyed");
  }
  if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(&it->second.releaseThreshold, value, sizeof(cuuint64_t));
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool handle, CUmemPool_attribute attr, void* value) {
  FAKE_ENTER("cuMemPoolGetAttribute", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end() || it->second.destroyed) {
    undefined("cuMemPoolGetAttribute", "pool " + hex(idOf(handle)) + " unknown or destroyed");
  }
  if (attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || value == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(value, &it->second.releaseThreshold, sizeof(cuuint64_t));
  return CUDA_SUCCESS;
}

CUresult cuMemAllocAsync(CUdeviceptr* address, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemAllocAsync", true);
  Stream& stream = liveStream(d, handle, "cuMemAllocAsync");
  const CUresult result =
      allocate(d, address, bytes, d.defaultPool, 0, d.contexts.at(stream.context).device);
  if (result != CUDA_SUCCESS) return result;
  ++d.pools.at(d.defaultPool).outstanding;
  if (stream.capturing) {
    // An allocation node: the memory is the graph's, at a fixed address for every launch.
    stream.capturedAllocations = true;
    stream.graphAllocations.push_back(*address);
    stream.captured.push_back([] {});
  }
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** host, size_t bytes, unsigned int flags) {
  FAKE_ENTER("cuMemHostAlloc", true);
  if (host == nullptr || bytes == 0 || (flags & ~0x7u) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!currentIsLive(d)) return CUDA_ERROR_INVALID_CONTEXT;
  auto* memory = new std::byte[bytes];
  const uint64_t id = d.nextId++;
  d.pinned.emplace(memory, Pinned{bytes, id, contextStack.back()});
  d.livePinned.insert(id);
  *host = memory;
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* host) {
  FAKE_ENTER("cuMemFreeHost", true);
  auto it = d.pinned.find(static_cast<const std::byte*>(host));
  if (it == d.pinned.end()) {
    undefined("cuMemFreeHost",
              "no live pinned allocation at this address (freed twice, or with "
              "its context?)");
  }
  d.livePinned.erase(it->second.id);
  // A copy still pending on it checks its pinned id before it touches the memory.
  delete[] it->first;
  d.pinned.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream handle) {
  FAKE_ENTER("cuMemsetD8Async", true);
  Stream& stream = liveStream(d, handle, "cuMemsetD8Async");
  resolve(d, dst, count, "cuMemsetD8Async", "destination", true);
  checkReach(d, dst, stream, "cuMemsetD8Async", "destination");
  const unsigned char written =
      plant() == "memset-plus-one" ? static_cast<unsigned char>(value + 1) : value;
  enqueue(stream, [&d, dst, written, count] {
    std::memset(resolve(d, dst, count, "cuMemsetD8Async (when it ran)", "destination", false),
                written, count);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyDtoDAsync_v2", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyDtoDAsync");
  resolve(d, dst, bytes, "cuMemcpyDtoDAsync", "destination", true);
  resolve(d, src, bytes, "cuMemcpyDtoDAsync", "source", true);
  checkReach(d, dst, stream, "cuMemcpyDtoDAsync", "destination");
  checkReach(d, src, stream, "cuMemcpyDtoDAsync", "source");
  enqueue(stream, [&d, dst, src, bytes] {
    constexpr const char* kCall = "cuMemcpyDtoDAsync (when it ran)";
    std::memmove(resolve(d, dst, bytes, kCall, "destination", false),
                 resolve(d, src, bytes, kCall, "source", false), bytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream handle, CUstreamCaptureMode mode) {
  FAKE_ENTER("cuStreamBeginCapture_v2", true);
  Stream& stream = liveStream(d, handle, "cuStreamBeginCapture");
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (stream.capturing) return CUDA_ERROR_ILLEGAL_STATE;
  stream.capturing = true;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream handle, CUgraph* graph) {
  FAKE_ENTER("cuStreamEndCapture", true);
  Stream& stream = liveStream(d, handle, "cuStreamEndCapture");
  if (!stream.capturing) return CUDA_ERROR_ILLEGAL_STATE;
  const uint64_t id = d.nextId++;
  Graph& g = d.graphs[id];
  g.nodes = std::make_shared<std::vector<std::function<void()>>>(std::move(stream.captured));
  g.allocationNodes = stream.capturedAllocations;
  g.allocations = std::move(stream.graphAllocations);
  stream.captured.clear();
  stream.graphAllocations.clear();
  stream.capturedAllocations = false;
  stream.capturing = false;
  *graph = handleOf<CUgraph>(id);
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph handle, unsigned long long flags) {
  FAKE_ENTER("cuGraphInstantiateWithFlags", true);
  Graph& g = liveGraph(d, handle, "cuGraphInstantiate");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // "there can be at most one executable graph in existence for that graph at a time".
  if (g.allocationNodes && g.liveExecs > 0) return CUDA_ERROR_INVALID_VALUE;
  ++g.liveExecs;
  const uint64_t id = d.nextId++;
  d.execs[id] = GraphExec{idOf(handle), true};
  *exec = handleOf<CUgraphExec>(id);
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec handle, CUstream streamHandle) {
  FAKE_ENTER("cuGraphLaunch", true);
  Stream& stream = liveStream(d, streamHandle, "cuGraphLaunch");
  auto it = d.execs.find(idOf(handle));
  if (it == d.execs.end() || !it->second.live) {
    undefined("cuGraphLaunch", "executable graph unknown or destroyed");
  }
  if (stream.capturing) undefined("cuGraphLaunch", "captured (the fake does not capture it)");
  const uint64_t graph = it->second.graph;
  Graph& g = d.graphs.at(graph);
  ++g.launchesInFlight;
  for (const std::function<void()>& node : *g.nodes)
    stream.work.push_back(node);
  stream.work.push_back([&d, graph] {
    --d.graphs.at(graph).launchesInFlight;
    releaseGraphIfUnused(d, graph);
  });
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec handle) {
  FAKE_ENTER("cuGraphExecDestroy", true);
  auto it = d.execs.find(idOf(handle));
  if (it == d.execs.end() || !it->second.live) {
    undefined("cuGraphExecDestroy", "executable graph unknown or destroyed twice");
  }
  // A launch in flight still completes; the exec is freed after it.
  it->second.live = false;
  --d.graphs.at(it->second.graph).liveExecs;
  releaseGraphIfUnused(d, it->second.graph);
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph handle) {
  FAKE_ENTER("cuGraphDestroy", true);
  liveGraph(d, handle, "cuGraphDestroy").live = false;
  releaseGraphIfUnused(d, idOf(handle));
  return CUDA_SUCCESS;
}

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags /*option*/) {
  FAKE_ENTER("cuMemGetAllocationGranularity", true);
  if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  FAKE_ENTER("cuMemAddressReserve", true);
  if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0 ||
      alignment % kGranularity != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  (void)addr;  // a hint only
  *ptr = d.nextVirtual;
  d.reservations.emplace(d.nextVirtual, Reservation{size});
  d.nextVirtual += size + kGranularity;  // ranges never touch, and are never reused
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FAKE_ENTER("cuMemAddressFree", true);
  auto it = d.reservations.find(ptr);
  if (it == d.reservations.end() || it->second.bytes != size) {
    undefined("cuMemAddressFree", hex(ptr) + " is no reserved range of that size");
  }
  auto mapped = d.mappings.lower_bound(ptr);
  if (mapped != d.mappings.end() && mapped->first < ptr + size) {
    undefined("cuMemAddressFree", "range " + hex(ptr) + " still has mappings");
  }
  d.reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  FAKE_ENTER("cuMemCreate", true);
  if (handle == nullptr || prop == nullptr || size == 0 || size % kGranularity != 0 || flags != 0 ||
      prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!validDevice(d, prop->location.id)) return CUDA_ERROR_INVALID_DEVICE;
  if (size > kTotalBytes - d.bytesInUse) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t id = d.nextId++;
  Block& b = d.blocks[id];
  b.memory.reset(new std::byte[size]);
  b.bytes = size;
  d.bytesInUse += size;
  *handle = id;
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace {

void releaseBlockIfUnused(Driver& d, uint64_t id) {
  auto it = d.blocks.find(id);
  if (it->second.handleLive || it->second.mappings > 0) return;
  d.bytesInUse -= it->second.bytes;
  d.blocks.erase(it);
}

}  // namespace

extern "C" {

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FAKE_ENTER("cuMemRelease", true);
  auto it = d.blocks.find(handle);
  if (it == d.blocks.end() || !it->second.handleLive) {
    undefined("cuMemRelease", "handle " + hex(handle) + " unknown or released twice");
  }
  // The memory stays while it is mapped.
  it->second.handleLive = false;
  releaseBlockIfUnused(d, handle);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  FAKE_ENTER("cuMemMap", true);
  auto block = d.blocks.find(handle);
  if (block == d.blocks.end() || !block->second.handleLive) {
    undefined("cuMemMap", "handle " + hex(handle) + " unknown or released");
  }
  if (offset != 0 || flags != 0 || size != block->second.bytes) return CUDA_ERROR_INVALID_VALUE;
  auto range = d.reservations.upper_bound(ptr);
  if (range == d.reservations.begin() ||
      ptr + size > std::prev(range)->first + std::prev(range)->second.bytes) {
    undefined("cuMemMap", hex(ptr) + " is not inside a reserved range");
  }
  if ((ptr - std::prev(range)->first) % kGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  auto next = d.mappings.lower_bound(ptr);
  const bool overlapsNext = next != d.mappings.end() && next->first < ptr + size;
  const bool overlapsPrev =
      next != d.mappings.begin() && std::prev(next)->first + std::prev(next)->second.bytes > ptr;
  if (overlapsNext || overlapsPrev) {
    // "cuMemMap can only create mappings on VA range reservations that are not currently mapped."
    undefined("cuMemMap", hex(ptr) + " is already mapped");
  }
  d.mappings.emplace(ptr, Mapping{size, handle, {}});
  ++block->second.mappings;
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  FAKE_ENTER("cuMemSetAccess", true);
  auto it = d.mappings.find(ptr);
  if (it == d.mappings.end() || it->second.bytes != size) {
    undefined("cuMemSetAccess", hex(ptr) + " is not the start of a mapping of that size");
  }
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!validDevice(d, desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
  }
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      it->second.devices.insert(desc[i].location.id);
    } else {
      it->second.devices.erase(desc[i].location.id);
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FAKE_ENTER("cuMemUnmap", true);
  auto it = d.mappings.find(ptr);
  if (it == d.mappings.end() || it->second.bytes != size) {
    undefined("cuMemUnmap", hex(ptr) + " is not a whole mapping");
  }
  const uint64_t block = it->second.block;
  d.mappings.erase(it);
  --d.blocks.at(block).mappings;
  releaseBlockIfUnused(d, block);
  return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAccess(CUmemoryPool handle, const CUmemAccessDesc* map, size_t count) {
  FAKE_ENTER("cuMemPoolSetAccess", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end() || it->second.destroyed) {
    undefined("cuMemPoolSetAccess", "pool " + hex(idOf(handle)) + " unknown or destroyed");
  }
  if (map == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!validDevice(d, map[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    // The pool's own device always has read-write access: the stand-in refuses taking it away.
    if (map[i].location.id == it->second.device &&
        map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    if (map[i].location.id == it->second.device) continue;
    if (map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      it->second.access.insert(map[i].location.id);
    } else {
      it->second.access.erase(map[i].location.id);
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool handle,
                            CUmemLocation* location) {
  FAKE_ENTER("cuMemPoolGetAccess", true);
  auto it = d.pools.find(idOf(handle));
  if (it == d.pools.end() || it->second.destroyed) {
    undefined("cuMemPoolGetAccess", "pool " + hex(idOf(handle)) + " unknown or destroyed");
  }
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (!validDevice(d, location->id)) return CUDA_ERROR_INVALID_DEVICE;
  const bool access = location->id == it->second.device || it->second.access.contains(location->id);
  *flags = access ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

}  // extern "C"

namespace {

/// What cuMemcpyPeer and cuMemcpyPeerAsync check: both contexts live, and each address memory of
/// its context's device, which the documentation makes the caller's promise.
void checkPeerCopy(Driver& d, CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                   CUcontext srcContext, size_t bytes, const char* call) {
  const auto device = [&d, call](CUdeviceptr address, CUcontext handle, size_t size,
                                 const char* role) {
    auto it = d.contexts.find(idOf(handle));
    if (it == d.contexts.end() || !it->second.live) {
      undefined(call,
                std::string(role) + " context " + hex(idOf(handle)) + " unknown or destroyed");
    }
    const Allocation& a = enqueuedRange(d, address, size, call, role);
    if (a.device != it->second.device) {
      undefined(call, std::string(role) + " " + hex(address) + " is memory of device " +
                          std::to_string(a.device) + ", not of its context's device " +
                          std::to_string(it->second.device));
    }
  };
  device(dst, dstContext, bytes, "destination");
  device(src, srcContext, bytes, "source");
}

}  // namespace

extern "C" {

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src,
                           CUcontext srcContext, size_t bytes, CUstream handle) {
  FAKE_ENTER("cuMemcpyPeerAsync", true);
  Stream& stream = liveStream(d, handle, "cuMemcpyPeerAsync");
  checkPeerCopy(d, dst, dstContext, src, srcContext, bytes, "cuMemcpyPeerAsync");
  enqueue(stream, [&d, dst, src, bytes] {
    constexpr const char* kCall = "cuMemcpyPeerAsync (when it ran)";
    std::memmove(resolve(d, dst, bytes, kCall, "destination", false),
                 resolve(d, src, bytes, kCall, "source", false), bytes);
  });
  return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                      size_t bytes) {
  FAKE_ENTER("cuMemcpyPeer", true);
  checkPeerCopy(d, dst, dstContext, src, srcContext, bytes, "cuMemcpyPeer");
  // Synchronous, on no stream of the model's: the copy is made now.
  std::memmove(resolve(d, dst, bytes, "cuMemcpyPeer", "destination", false),
               resolve(d, src, bytes, "cuMemcpyPeer", "source", false), bytes);
  return CUDA_SUCCESS;
}

}  // extern "C"

// cuGetProcAddress, as the CUDA runtime finds the driver's entry points: by plain name, the newest
// version this stand-in defines. The harness's interposer wraps what it answers (docs/failures.md).
extern "C" CUresult fakeGetProcAddressV1(const char*, void**, int,
                                         cuuint64_t) __asm__("cuGetProcAddress");

namespace {

/// cuGetProcAddress answers itself in the signature of the version asked: CUDA 12.0 added the
/// query result.
CUresult getProcAddress(const char* symbol, void** pfn, int version,
                        CUdriverProcAddressQueryResult* status) {
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry kEntries[] = {
      {"cuInit", reinterpret_cast<void*>(&cuInit)},
      {"cuGetErrorName", reinterpret_cast<void*>(&cuGetErrorName)},
      {"cuDriverGetVersion", reinterpret_cast<void*>(&cuDriverGetVersion)},
      {"cuDeviceGetCount", reinterpret_cast<void*>(&cuDeviceGetCount)},
      {"cuDeviceGet", reinterpret_cast<void*>(&cuDeviceGet)},
      {"cuDeviceGetName", reinterpret_cast<void*>(&cuDeviceGetName)},
      {"cuDeviceGetUuid", reinterpret_cast<void*>(&cuDeviceGetUuid)},
      {"cuDeviceCanAccessPeer", reinterpret_cast<void*>(&cuDeviceCanAccessPeer)},
      {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&cuDevicePrimaryCtxRetain)},
      {"cuDevicePrimaryCtxRelease", reinterpret_cast<void*>(&cuDevicePrimaryCtxRelease_v2)},
      {"cuCtxCreate", reinterpret_cast<void*>(&cuCtxCreate_v4)},
      {"cuCtxDestroy", reinterpret_cast<void*>(&cuCtxDestroy_v2)},
      {"cuCtxSetCurrent", reinterpret_cast<void*>(&cuCtxSetCurrent)},
      {"cuCtxEnablePeerAccess", reinterpret_cast<void*>(&cuCtxEnablePeerAccess)},
      {"cuCtxDisablePeerAccess", reinterpret_cast<void*>(&cuCtxDisablePeerAccess)},
      {"cuCtxPopCurrent", reinterpret_cast<void*>(&cuCtxPopCurrent_v2)},
      {"cuStreamCreate", reinterpret_cast<void*>(&cuStreamCreate)},
      {"cuStreamCreateWithPriority", reinterpret_cast<void*>(&cuStreamCreateWithPriority)},
      {"cuCtxGetStreamPriorityRange", reinterpret_cast<void*>(&cuCtxGetStreamPriorityRange)},
      {"cuStreamDestroy", reinterpret_cast<void*>(&cuStreamDestroy_v2)},
      {"cuStreamSynchronize", reinterpret_cast<void*>(&cuStreamSynchronize)},
      {"cuStreamQuery", reinterpret_cast<void*>(&cuStreamQuery)},
      {"cuMemGetInfo", reinterpret_cast<void*>(&cuMemGetInfo_v2)},
      {"cuMemAlloc", reinterpret_cast<void*>(&cuMemAlloc_v2)},
      {"cuMemFree", reinterpret_cast<void*>(&cuMemFree_v2)},
      {"cuMemPoolCreate", reinterpret_cast<void*>(&cuMemPoolCreate)},
      {"cuMemPoolDestroy", reinterpret_cast<void*>(&cuMemPoolDestroy)},
      {"cuMemAllocFromPoolAsync", reinterpret_cast<void*>(&cuMemAllocFromPoolAsync)},
      {"cuMemFreeAsync", reinterpret_cast<void*>(&cuMemFreeAsync)},
      {"cuMemcpyHtoDAsync", reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2)},
      {"cuMemcpyDtoHAsync", reinterpret_cast<void*>(&cuMemcpyDtoHAsync_v2)},
      {"cuModuleLoadData", reinterpret_cast<void*>(&cuModuleLoadData)},
      {"cuModuleGetFunction", reinterpret_cast<void*>(&cuModuleGetFunction)},
      {"cuModuleUnload", reinterpret_cast<void*>(&cuModuleUnload)},
      {"cuLaunchKernel", reinterpret_cast<void*>(&cuLaunchKernel)},
      {"cuCtxSynchronize", reinterpret_cast<void*>(&cuCtxSynchronize)},
      {"cuEventCreate", reinterpret_cast<void*>(&cuEventCreate)},
      {"cuEventRecord", reinterpret_cast<void*>(&cuEventRecord)},
      {"cuEventQuery", reinterpret_cast<void*>(&cuEventQuery)},
      {"cuEventSynchronize", reinterpret_cast<void*>(&cuEventSynchronize)},
      {"cuEventDestroy", reinterpret_cast<void*>(&cuEventDestroy_v2)},
      {"cuStreamWaitEvent", reinterpret_cast<void*>(&cuStreamWaitEvent)},
      {"cuLaunchHostFunc", reinterpret_cast<void*>(&cuLaunchHostFunc)},
      {"cuMemPoolTrimTo", reinterpret_cast<void*>(&cuMemPoolTrimTo)},
      {"cuMemPoolSetAttribute", reinterpret_cast<void*>(&cuMemPoolSetAttribute)},
      {"cuMemPoolGetAttribute", reinterpret_cast<void*>(&cuMemPoolGetAttribute)},
      {"cuMemAllocAsync", reinterpret_cast<void*>(&cuMemAllocAsync)},
      {"cuMemHostAlloc", reinterpret_cast<void*>(&cuMemHostAlloc)},
      {"cuMemFreeHost", reinterpret_cast<void*>(&cuMemFreeHost)},
      {"cuMemsetD8Async", reinterpret_cast<void*>(&cuMemsetD8Async)},
      {"cuMemcpyDtoDAsync", reinterpret_cast<void*>(&cuMemcpyDtoDAsync_v2)},
      {"cuStreamBeginCapture", reinterpret_cast<void*>(&cuStreamBeginCapture_v2)},
      {"cuStreamEndCapture", reinterpret_cast<void*>(&cuStreamEndCapture)},
      {"cuGraphInstantiateWithFlags", reinterpret_cast<void*>(&cuGraphInstantiateWithFlags)},
      {"cuGraphLaunch", reinterpret_cast<void*>(&cuGraphLaunch)},
      {"cuGraphExecDestroy", reinterpret_cast<void*>(&cuGraphExecDestroy)},
      {"cuGraphDestroy", reinterpret_cast<void*>(&cuGraphDestroy)},
      {"cuMemGetAllocationGranularity", reinterpret_cast<void*>(&cuMemGetAllocationGranularity)},
      {"cuMemAddressReserve", reinterpret_cast<void*>(&cuMemAddressReserve)},
      {"cuMemAddressFree", reinterpret_cast<void*>(&cuMemAddressFree)},
      {"cuMemCreate", reinterpret_cast<void*>(&cuMemCreate)},
      {"cuMemRelease", reinterpret_cast<void*>(&cuMemRelease)},
      {"cuMemMap", reinterpret_cast<void*>(&cuMemMap)},
      {"cuMemSetAccess", reinterpret_cast<void*>(&cuMemSetAccess)},
      {"cuMemUnmap", reinterpret_cast<void*>(&cuMemUnmap)},
      {"cuMemPoolSetAccess", reinterpret_cast<void*>(&cuMemPoolSetAccess)},
      {"cuMemPoolGetAccess", reinterpret_cast<void*>(&cuMemPoolGetAccess)},
      {"cuMemcpyPeerAsync", reinterpret_cast<void*>(&cuMemcpyPeerAsync)},
      {"cuMemcpyPeer", reinterpret_cast<void*>(&cuMemcpyPeer)},
  };
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, symbol) == 0) *pfn = e.fn;
  }
  if (std::strcmp(symbol, "cuGetProcAddress") == 0) {
    *pfn = version >= 12000 ? reinterpret_cast<void*>(&cuGetProcAddress_v2)
                            : reinterpret_cast<void*>(&fakeGetProcAddressV1);
  }
  if (status != nullptr) {
    *status = *pfn != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return *pfn != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t /*flags*/,
                             CUdriverProcAddressQueryResult* status) {
  return getProcAddress(symbol, pfn, cudaVersion, status);
}

/// CUDA 11's signature, without the query result.
CUresult fakeGetProcAddressV1(const char* symbol, void** pfn, int cudaVersion, cuuint64_t) {
  return getProcAddress(symbol, pfn, cudaVersion, nullptr);
}

}  // extern "C"
