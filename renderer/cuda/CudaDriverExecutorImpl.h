// CudaDriverExecutorImpl.h: the cuda-driver executor's records and handlers, shared by its files:
// CudaDriverExecutor.cpp (the table, orders, waits, contexts, streams and events),
// CudaMemoryOps.cpp (pools, allocations, peers and pinned host memory), CudaGraphOps.cpp and
// CudaVirtualMemoryOps.cpp.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/ExecutorKit.h"
#include "renderer/device/ModelExecutor.h"

namespace gpufuzz::cudamodel {

/// What the executor's messages call it.
inline constexpr const char* kOwner = "cuda-driver";

/// Bytes of each allocation the host shadow follows; the model's sizes stay within it.
inline constexpr size_t kShadowBytes = 65536;
/// An unknown byte of a shadow (never written by the model's operations).
inline constexpr int16_t kUnknown = -1;

/// One host function enqueued by host_func: whether the driver has run it yet.
struct Ticket {
  std::atomic<bool> ran{false};
  std::string what;  // "host function of host_func at 7 on s0"
};

struct Ctx {
  std::string name;
  CUcontext handle = nullptr;
  bool primary = false;
  bool destroyed = false;
  CUdevice device = 0;
};

struct Event;

struct Stream {
  std::string name;
  std::shared_ptr<Ctx> ctx;
  CUstream handle = nullptr;
  /// The executor's own event, recorded on this stream to order other streams and the host
  /// after the work enqueued so far (cuStreamWaitEvent, cuEventSynchronize).
  CUevent fence = nullptr;
  /// cuEventRecord calls of `fence` so far: a wait covers only the records made before it began.
  uint64_t records = 0;
  /// Operations naming it that are under way: their calls may still enqueue work on it.
  int busy = 0;
  /// cuStreamDestroy is called or was; `fence` holds its last work.
  bool destroyed = false;
  /// Host functions enqueued since the stream was last waited for.
  std::vector<std::shared_ptr<Ticket>> tickets;
  /// Events this stream waited for (cuStreamWaitEvent) since it was last waited for, each with
  /// the host functions its record followed.
  struct Waited {
    std::weak_ptr<Event> event;
    std::string name;
    std::vector<std::shared_ptr<Ticket>> tickets;
    /// Event::records when the stream waited: a later record is not what it waited for.
    uint64_t records = 0;
  };
  std::vector<Waited> waited;
  /// Its context was destroyed: the documentation makes every later use of the handle undefined.
  bool orphan() const { return ctx->destroyed; }
};

struct Event {
  std::string name;
  std::shared_ptr<Ctx> ctx;
  CUevent handle = nullptr;
  /// The host functions enqueued on the stream before the event's last record.
  std::vector<std::shared_ptr<Ticket>> tickets;
  /// cuEventRecord calls so far, each counted before it is made.
  uint64_t records = 0;
  bool destroyed = false;
  bool orphan() const { return ctx->destroyed; }
};

/// Marks the streams an operation names busy (Stream::busy) until it returns.
class Busy {
 public:
  explicit Busy(std::vector<std::shared_ptr<Stream>> streams) : streams_(std::move(streams)) {
    for (const std::shared_ptr<Stream>& s : streams_)
      ++s->busy;
  }
  ~Busy() {
    for (const std::shared_ptr<Stream>& s : streams_)
      --s->busy;
  }
  Busy(const Busy&) = delete;
  Busy& operator=(const Busy&) = delete;

 private:
  std::vector<std::shared_ptr<Stream>> streams_;
};

/// The stream the work on some memory was last enqueued on, so the next user on another stream,
/// or the host, waits for it first.
struct LastUse {
  std::shared_ptr<Stream> stream;
};

/// What a device range holds by the model's operations: a byte, or kUnknown.
using Shadow = std::vector<int16_t>;

struct Pool {
  std::string name;
  CUmemoryPool handle = nullptr;
  CUdevice device = 0;
  /// Other devices given read-write access (cuMemPoolSetAccess); kept while allocations live.
  std::set<CUdevice> access;
};

struct Buf {
  std::string name;
  std::shared_ptr<Pool> pool;
  CUdeviceptr address = 0;
  size_t bytes = 0;
  LastUse use;
  Shadow shadow;

  /// Whether work on `device` may touch this memory: its pool's device, or one the pool gave
  /// access to (cuMemPoolSetAccess). Peer access never reaches pool memory.
  bool reachableFrom(CUdevice device) const {
    return device == pool->device || pool->access.contains(device);
  }
};

struct HostBuf {
  std::string name;
  std::byte* host = nullptr;
  size_t bytes = 0;
  LastUse use;
  Shadow shadow;
};

/// Pinned host memory that a captured graph copies its allocation's bytes into.
struct GraphSlot {
  std::byte* host = nullptr;
  size_t bytes = 0;
  LastUse use;
  bool launched = false;
};

struct Graph {
  std::string name;
  std::shared_ptr<Ctx> ctx;  // the context it was captured in
  CUgraph handle = nullptr;
  std::shared_ptr<GraphSlot> slot;
  uint8_t value = 0;
  bool destroyed = false;
  /// Executable graphs of it not yet destroyed: the documentation allows one at a time.
  int liveExecs = 0;
  /// Of those, the ones whose destroy is under way (destroyExec).
  int ending = 0;
  bool orphan() const { return ctx->destroyed; }
};

struct GraphExec {
  std::string name;
  std::shared_ptr<Graph> graph;
  /// Null when the instantiation was refused, as documented, or its graph's context is gone.
  CUgraphExec handle = nullptr;
};

struct Phys {
  std::string name;
  CUmemGenericAllocationHandle handle = 0;
  LastUse use;
  Shadow shadow;
};

struct Mapping;

struct Va {
  std::string name;
  CUdeviceptr base = 0;
  size_t granules = 0;
  std::vector<std::shared_ptr<Mapping>> slots;  // null where nothing is mapped
};

struct Mapping {
  std::string name;
  std::shared_ptr<Phys> phys;
  CUdeviceptr address = 0;
  /// A range reserved for this mapping alone, when its va had no free granule.
  bool ownRange = false;
  /// Unmapped by cuMemUnmap, possibly through its va's free.
  bool unmapped = false;
};

inline std::string streamLabel(const Stream& s) {
  return s.name;
}

class CudaDriverExecutor final : public ModelExecutor {
 public:
  CudaDriverExecutor(std::string_view backend, int ordinal);
  ~CudaDriverExecutor() override;

  std::string description() const override;
  void run(const ModelCall& call) override;
  void release(std::string_view kind, const std::string& name) override;
  void setDefaultReleases(std::span<const DefaultRelease> releases) override {
    releases_.set(releases);
  }
  std::string leaked() override;
  /// Every device of the process is bounded alike: the model's operations pick any of them.
  bool leaveDeviceMemory(uint64_t bytes) override {
    for (int ordinal = 0; ordinal < driver_.deviceCount; ++ordinal) {
      CUdevice device = 0;
      if (driver_.deviceGet(&device, ordinal) != CUDA_SUCCESS) continue;
      driver_.leaveDeviceMemory(device, bytes);
    }
    return true;
  }

  /// Each operation of model cuda-driver with its handler, and the kinds released another way.
  static const kit::OpTable<CudaDriverExecutor>& table();

 private:
  // Calls.
  void ok(CUresult result, CallPoint point, const std::string& call) const {
    if (result != CUDA_SUCCESS) {
      throw DeviceError(point, call + ": " + driver_.errorName(result));
    }
  }
  void current(const Ctx& ctx, CallPoint point) const {
    ok(driver_.ctxSetCurrent(ctx.handle), point, "cuCtxSetCurrent(" + ctx.name + ")");
  }
  void currentPrimary(CallPoint point) const { current(*primary_, point); }

  // Devices.
  /// The device the model's `device=k` argument names: the k-th after the executor's own,
  /// wrapping around the devices present (the model's bound is static; docs/models.md).
  CUdevice deviceArg(const ModelCall& c) const;
  /// Device `device`'s primary context and the executor's stream in it, retained for the life of
  /// the executor on first use. The entry is never erased, so the reference stays valid.
  struct DeviceState {
    std::shared_ptr<Ctx> primary;
    std::shared_ptr<Stream> own;
  };
  DeviceState& stateOf(CUdevice device);
  /// Work of `s` on memory of `device` that `s`'s device may not touch runs on the executor's
  /// stream of `device` instead, ordered after `s`'s work so far; rejoin() orders `s` after it.
  /// Every name shares that stream: callers keep the state from detour() to rejoin().
  std::shared_ptr<Stream> detour(const std::shared_ptr<Stream>& s, CUdevice device,
                                 CallPoint point);
  void rejoin(const std::shared_ptr<Stream>& s, const std::shared_ptr<Stream>& on, CallPoint point);
  /// `s` when its device may touch `buf` (its pool's device, or one the pool gave access), else
  /// detour()'s stream.
  std::shared_ptr<Stream> reaching(const std::shared_ptr<Stream>& s, const Buf& buf,
                                   CallPoint point);
  /// What peer access is keyed by: one record per context, whichever name retained it.
  const Ctx* identity(const Ctx& ctx) {
    return ctx.primary ? stateOf(ctx.device).primary.get() : &ctx;
  }

  // Names.
  /// The stream an operation naming stream `name` runs on: its own, or, when its context was
  /// destroyed, the executor's stream of the primary context. cuCtxDestroy makes any later use of
  /// its streams undefined, so the work goes where it is defined and is still done.
  std::shared_ptr<Stream> target(const std::string& name, CallPoint point);
  /// Whether an operation on `names` keeps the state throughout: it names a stream, event or graph
  /// of a context made by ctx_create, which another name's ctx_destroy may end meanwhile.
  bool keepsState(std::span<const std::string> names) const;
  /// The live streams among `names`.
  std::vector<std::shared_ptr<Stream>> streamsNamed(std::span<const std::string> names) const;

  // Ordering and waits made by the executor to keep the model's orders defined.
  /// The executor's own stream in `ctx`, made on first use and gone with the context.
  std::shared_ptr<Stream> helperOf(const std::shared_ptr<Ctx>& ctx);
  /// Orders `stream` after the last work on `use` when that was on another stream: work on
  /// memory enqueued on two streams without an order between them is a data race.
  void order(LastUse& use, const std::shared_ptr<Stream>& stream, CallPoint point);
  /// Waits on the host for the last work on `use`.
  void hostWait(LastUse& use, CallPoint point);
  void recordFence(Stream& stream, CallPoint point);

  // The wait-completion oracle.
  /// After `wait` returned, under seam::KeepState: the host functions and events `stream` waited
  /// for are done, and with `query`, cuStreamQuery says so too. `query` is false where work of
  /// another operation may have come after the wait began.
  void checkStreamDone(Stream& stream, bool query, const std::string& wait);
  static void checkTickets(const std::vector<std::shared_ptr<Ticket>>& tickets,
                           const std::string& wait);
  void pruneTickets();
  void pruneRetired();

  // Shadows.
  static void compare(const Shadow& shadow, const std::byte* got, size_t bytes,
                      const std::string& what);

  // Operations.
  void primaryRetain(const ModelCall& c);
  void ctxCreate(const ModelCall& c);
  void ctxSync(const ModelCall& c);
  void ctxDestroy(const ModelCall& c);
  void streamCreate(const ModelCall& c);
  void streamSync(const ModelCall& c);
  void streamQuery(const ModelCall& c);
  void streamDestroy(const ModelCall& c);
  void hostFunc(const ModelCall& c);
  void eventCreate(const ModelCall& c);
  void eventRecord(const ModelCall& c);
  void streamWaitEvent(const ModelCall& c);
  void eventQuery(const ModelCall& c);
  void eventSync(const ModelCall& c);
  void eventDestroy(const ModelCall& c);
  void poolCreate(const ModelCall& c);
  void poolSetThreshold(const ModelCall& c);
  void poolTrim(const ModelCall& c);
  void poolDestroy(const ModelCall& c);
  void alloc(const ModelCall& c);
  void free(const ModelCall& c);
  void memset(const ModelCall& c);
  void memcpyDtoD(const ModelCall& c);
  void read(const ModelCall& c);
  void hostAlloc(const ModelCall& c);
  void hostFill(const ModelCall& c);
  void memcpyHtoD(const ModelCall& c);
  void memcpyDtoH(const ModelCall& c);
  void hostCheck(const ModelCall& c);
  void hostFree(const ModelCall& c);
  void peerEnable(const ModelCall& c);
  void peerDisable(const ModelCall& c);
  void memcpyPeer(const ModelCall& c);
  /// memcpy_dtod and memcpy_peer: a peer copy when asked (`peer`) or where the stream's device
  /// cannot reach both buffers, else cuMemcpyDtoDAsync.
  void copyDevice(const ModelCall& c, bool peer);
  /// memcpy_htod and memcpy_dtoh: `dst` and `src` are a buf and a hostbuf either way round,
  /// `device` the buf. `copy` makes the driver call `call` for a byte count on a stream.
  template <typename Dst, typename Src, typename Copy>
  void copyWithHost(const ModelCall& c, Dst& dst, Src& src, const Buf& device, CallPoint point,
                    const char* call, Copy copy);
  void poolAccess(const ModelCall& c);
  void graphCapture(const ModelCall& c);
  void graphInstantiate(const ModelCall& c);
  void graphLaunch(const ModelCall& c);
  void graphExecDestroy(const ModelCall& c);
  void graphDestroy(const ModelCall& c);
  void vaReserve(const ModelCall& c);
  void memCreate(const ModelCall& c);
  void memMap(const ModelCall& c);
  void mapMemset(const ModelCall& c);
  void mapRead(const ModelCall& c);
  void memUnmap(const ModelCall& c);
  void memRelease(const ModelCall& c);
  void vaFree(const ModelCall& c);

  // What ending operations and release() share.
  void destroyCtx(const std::string& name);
  void destroyStream(const std::string& name);
  void destroyEvent(const std::string& name);
  void destroyPool(const std::string& name);
  void freeBuf(const std::string& name, std::shared_ptr<Stream> stream);
  /// The release of a buf leftover: its kind's ending operation, free, also takes a stream, so
  /// the model gives it no default release.
  void releaseBuf(const std::string& name);
  void freeHost(const std::string& name);
  void destroyExec(const std::string& name);
  void destroyGraph(const std::string& name);
  void unmap(Mapping& mapping, Va* va);
  void freeVa(const std::string& name);
  void releasePhys(const std::string& name);
  void freeSlotIfUnused(Graph& graph);
  /// Copies `bytes` from `src` on `stream` to the host, waits for the stream (a wait of the
  /// model, checked), and compares with `shadow`.
  void readBack(const std::shared_ptr<Stream>& stream, CUdeviceptr src, size_t bytes,
                const Shadow& shadow, const std::string& call, const std::string& what);
  std::shared_ptr<Stream> makeStream(const std::string& name, const std::shared_ptr<Ctx>& ctx,
                                     unsigned flags, int priority);

  const CudaDriver& driver_;
  std::string backend_;
  CUdevice device_ = 0;
  size_t granularity_ = 0;
  std::shared_ptr<Ctx> primary_;
  /// The executor's own stream of the primary context (see target()).
  std::shared_ptr<Stream> own_;
  /// helperOf's streams, by context; a destroyed context's are orphans.
  std::map<const Ctx*, std::shared_ptr<Stream>> helpers_;
  /// stateOf's devices; the executor's own is there from the start.
  std::map<CUdevice, DeviceState> devices_;
  /// Peer access enabled, as (from, to) by identity(); pairs of a destroyed context go with it.
  std::set<std::pair<const Ctx*, const Ctx*>> peers_;

  // Records are shared pointers: a handler keeps a copy, so that the record outlives the driver
  // calls made while it is held.
  kit::Kind<std::shared_ptr<Ctx>> ctxs_{kOwner, "ctx"};
  kit::Kind<std::shared_ptr<Stream>> streams_{kOwner, "stream"};
  kit::Kind<std::shared_ptr<Event>> events_{kOwner, "event"};
  kit::Kind<std::shared_ptr<Pool>> pools_{kOwner, "pool"};
  kit::Kind<std::shared_ptr<Buf>> bufs_{kOwner, "buf"};
  kit::Kind<std::shared_ptr<HostBuf>> hostBufs_{kOwner, "hostbuf"};
  kit::Kind<std::shared_ptr<Graph>> graphs_{kOwner, "graph"};
  kit::Kind<std::shared_ptr<GraphExec>> execs_{kOwner, "gexec"};
  kit::Kind<std::shared_ptr<Va>> vas_{kOwner, "va"};
  kit::Kind<std::shared_ptr<Phys>> physs_{kOwner, "phys"};
  kit::Kind<std::shared_ptr<Mapping>> mappings_{kOwner, "mapping"};
  kit::DefaultReleases releases_;
  /// Destroyed streams whose fence memory may still order: kept until nothing refers to them.
  std::vector<std::shared_ptr<Stream>> retired_;
  /// Host functions enqueued and not yet seen to have run.
  std::vector<std::shared_ptr<Ticket>> inFlight_;
  uint64_t ticketCount_ = 0;
};

}  // namespace gpufuzz::cudamodel
