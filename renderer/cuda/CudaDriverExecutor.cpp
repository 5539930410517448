// CudaDriverExecutor.cpp: each operation of the cuda-driver model as driver calls.
#include "renderer/cuda/CudaDriverExecutor.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "renderer/cuda/CudaCalls.h"
#include "renderer/cuda/CudaDriver.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace {

/// Bytes of each allocation the host shadow follows; the model's sizes stay within it.
constexpr size_t kShadowBytes = 65536;
/// An unknown byte of a shadow (never written by the model's operations).
constexpr int16_t kUnknown = -1;

std::string hex(unsigned value) {
  constexpr const char* kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[(value >> 4) & 15] + kDigits[value & 15];
}

/// One host function enqueued by host_func: whether the driver has run it yet.
struct Ticket {
  std::atomic<bool> ran{false};
  std::string what;  // "host function of host_func at 7 on s0"
};

void CUDA_CB markRan(void* ticket) {
  static_cast<Ticket*>(ticket)->ran.store(true);
}

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

class CudaDriverExecutor final : public ModelExecutor {
 public:
  CudaDriverExecutor(std::string_view backend, int ordinal);
  ~CudaDriverExecutor() override;

  std::string description() const override;
  void run(const ModelCall& call) override;
  void release(std::string_view kind, const std::string& name) override;
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

 private:
  using Handler = void (CudaDriverExecutor::*)(const ModelCall&);
  static const std::map<std::string_view, Handler>& handlers();

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
  /// A copy, so that the record outlives the driver calls made while it is held.
  template <typename T>
  static std::shared_ptr<T> named(const std::map<std::string, std::shared_ptr<T>>& records,
                                  const std::string& name) {
    auto it = records.find(name);
    if (it == records.end()) throw std::logic_error("cuda-driver: no record of " + name);
    return it->second;
  }
  template <typename T>
  static std::shared_ptr<T> take(std::map<std::string, std::shared_ptr<T>>& records,
                                 const std::string& name) {
    auto it = records.find(name);
    if (it == records.end()) throw std::logic_error("cuda-driver: no record of " + name);
    std::shared_ptr<T> record = std::move(it->second);
    records.erase(it);
    return record;
  }
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

  std::map<std::string, std::shared_ptr<Ctx>> ctxs_;
  std::map<std::string, std::shared_ptr<Stream>> streams_;
  std::map<std::string, std::shared_ptr<Event>> events_;
  std::map<std::string, std::shared_ptr<Pool>> pools_;
  std::map<std::string, std::shared_ptr<Buf>> bufs_;
  std::map<std::string, std::shared_ptr<HostBuf>> hostBufs_;
  std::map<std::string, std::shared_ptr<Graph>> graphs_;
  std::map<std::string, std::shared_ptr<GraphExec>> execs_;
  std::map<std::string, std::shared_ptr<Va>> vas_;
  std::map<std::string, std::shared_ptr<Phys>> physs_;
  std::map<std::string, std::shared_ptr<Mapping>> mappings_;
  /// Destroyed streams whose fence memory may still order: kept until nothing refers to them.
  std::vector<std::shared_ptr<Stream>> retired_;
  /// Host functions enqueued and not yet seen to have run.
  std::vector<std::shared_ptr<Ticket>> inFlight_;
  uint64_t ticketCount_ = 0;
};

std::string streamLabel(const Stream& s) {
  return s.name;
}

CudaDriverExecutor::CudaDriverExecutor(std::string_view backend, int ordinal)
    : driver_(cudaDriver()), backend_(backend) {
  if (!driver_.asyncMissing.empty() || !driver_.modelMissing.empty()) {
    std::string missing = driver_.asyncMissing;
    if (!missing.empty() && !driver_.modelMissing.empty()) missing += ", ";
    missing += driver_.modelMissing;
    throw DeviceUnavailable("CUDA driver too old for the cuda-driver model: libcuda.so.1 lacks " +
                            missing);
  }
  if (ordinal < 0 || ordinal >= driver_.deviceCount) {
    throw DeviceUnavailable("no CUDA device " + std::to_string(ordinal) + " (" +
                            std::to_string(driver_.deviceCount) + " found)");
  }
  const CUresult got = driver_.deviceGet(&device_, ordinal);
  if (got != CUDA_SUCCESS) {
    throw DeviceUnavailable("CUDA device " + std::to_string(ordinal) +
                            " unusable: cuDeviceGet: " + driver_.errorName(got));
  }
  primary_ = std::make_shared<Ctx>(Ctx{
      "the primary context", cuda::retainedPrimaryContext(driver_, device_), true, false, device_});
  try {
    own_ = makeStream("the executor's stream", primary_, CU_STREAM_NON_BLOCKING, 0);
    devices_[device_] = DeviceState{primary_, own_};
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    ok(driver_.memGetAllocationGranularity(&granularity_, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
       CallPoint::CtxCreate, "cuMemGetAllocationGranularity");
  } catch (const DeviceError& e) {
    throw DeviceUnavailable("CUDA device " + std::to_string(ordinal) +
                            " unusable for the cuda-driver model: " + e.what());
  }
}

CudaDriverExecutor::~CudaDriverExecutor() {
  // Nothing here may block on the driver (ModelExecutor.h): what a failed sequence left is the
  // process's exit's to release. Host functions still pending keep their tickets.
  for (const std::shared_ptr<Ticket>& t : inFlight_) {
    if (!t->ran.load()) new std::shared_ptr<Ticket>(t);  // never freed: the driver may still run it
  }
}

std::string CudaDriverExecutor::description() const {
  return driver_.describeDevice(device_) + " (" + backend_ + ", driver API)";
}

const std::map<std::string_view, CudaDriverExecutor::Handler>& CudaDriverExecutor::handlers() {
  using E = CudaDriverExecutor;
  static const std::map<std::string_view, Handler> table = {
      {"primary_retain", &E::primaryRetain},
      {"ctx_create", &E::ctxCreate},
      {"ctx_sync", &E::ctxSync},
      {"ctx_destroy", &E::ctxDestroy},
      {"stream_create", &E::streamCreate},
      {"stream_sync", &E::streamSync},
      {"stream_query", &E::streamQuery},
      {"stream_destroy", &E::streamDestroy},
      {"host_func", &E::hostFunc},
      {"event_create", &E::eventCreate},
      {"event_record", &E::eventRecord},
      {"stream_wait_event", &E::streamWaitEvent},
      {"event_query", &E::eventQuery},
      {"event_sync", &E::eventSync},
      {"event_destroy", &E::eventDestroy},
      {"pool_create", &E::poolCreate},
      {"pool_set_threshold", &E::poolSetThreshold},
      {"pool_trim", &E::poolTrim},
      {"pool_destroy", &E::poolDestroy},
      {"alloc", &E::alloc},
      {"free", &E::free},
      {"memset", &E::memset},
      {"memcpy_dtod", &E::memcpyDtoD},
      {"read", &E::read},
      {"host_alloc", &E::hostAlloc},
      {"host_fill", &E::hostFill},
      {"memcpy_htod", &E::memcpyHtoD},
      {"memcpy_dtoh", &E::memcpyDtoH},
      {"host_check", &E::hostCheck},
      {"host_free", &E::hostFree},
      {"graph_capture", &E::graphCapture},
      {"graph_instantiate", &E::graphInstantiate},
      {"graph_launch", &E::graphLaunch},
      {"graph_exec_destroy", &E::graphExecDestroy},
      {"graph_destroy", &E::graphDestroy},
      {"peer_enable", &E::peerEnable},
      {"peer_disable", &E::peerDisable},
      {"memcpy_peer", &E::memcpyPeer},
      {"pool_access", &E::poolAccess},
      {"va_reserve", &E::vaReserve},
      {"mem_create", &E::memCreate},
      {"mem_map", &E::memMap},
      {"map_memset", &E::mapMemset},
      {"map_read", &E::mapRead},
      {"mem_unmap", &E::memUnmap},
      {"mem_release", &E::memRelease},
      {"va_free", &E::vaFree},
  };
  return table;
}

void CudaDriverExecutor::run(const ModelCall& call) {
  auto it = handlers().find(call.op);
  if (it == handlers().end()) {
    throw std::logic_error("cuda-driver: no operation " + std::string(call.op));
  }
  pruneTickets();
  // Another name's ctx_destroy may end such objects, and cuCtxDestroy must meet no call on them.
  const seam::KeepState keep(keepsState(call.names));
  const Busy busy(streamsNamed(call.names));
  (this->*(it->second))(call);
}

void CudaDriverExecutor::release(std::string_view kind, const std::string& name) {
  // As in run(): a failed operation's names are released while other threads still run.
  const seam::KeepState keep(keepsState(std::span(&name, 1)));
  if (kind == "gexec") return destroyExec(name);
  if (kind == "graph") return destroyGraph(name);
  if (kind == "buf") {
    // The stream is another name's, or the executor's own, which every name shares.
    const seam::KeepState keepStream;
    // Freed on the stream of its last work, where that needs no order of the executor's.
    const std::shared_ptr<Buf> buf = named(bufs_, name);
    const std::shared_ptr<Stream> last = buf->use.stream;
    const bool usable = last && !last->destroyed && !last->orphan();
    return freeBuf(name, usable ? last : own_);
  }
  if (kind == "hostbuf") return freeHost(name);
  if (kind == "mapping") {
    const std::shared_ptr<Mapping> m = take(mappings_, name);
    return unmap(*m, nullptr);
  }
  if (kind == "va") return freeVa(name);
  if (kind == "phys") return releasePhys(name);
  if (kind == "event") return destroyEvent(name);
  if (kind == "stream") return destroyStream(name);
  if (kind == "pool") return destroyPool(name);
  if (kind == "ctx") return destroyCtx(name);
  throw std::logic_error("cuda-driver: no kind " + std::string(kind));
}

std::string CudaDriverExecutor::leaked() {
  // Everything is released; wait for what the primary contexts still run (frees, destroyed
  // streams' work), so that host functions and graph slots can be accounted for.
  for (const auto& [device, state] : devices_) {
    current(*state.primary, CallPoint::Sync);
    ok(driver_.ctxSynchronize(), CallPoint::Sync,
       "cuCtxSynchronize(the primary context of device " + std::to_string(device) + ")");
  }
  pruneRetired();
  std::string held;
  for (const std::shared_ptr<Ticket>& t : inFlight_) {
    if (!t->ran.load()) held += (held.empty() ? "" : "; ") + t->what + " never ran";
  }
  pruneTickets();
  return held;
}

// ---- Ordering and waits ----------------------------------------------------------------------

CUdevice CudaDriverExecutor::deviceArg(const ModelCall& c) const {
  const uint64_t count = static_cast<uint64_t>(driver_.deviceCount);
  return static_cast<CUdevice>((static_cast<uint64_t>(device_) + c.arg("device") % count) % count);
}

CudaDriverExecutor::DeviceState& CudaDriverExecutor::stateOf(CUdevice device) {
  auto it = devices_.find(device);
  if (it != devices_.end()) return it->second;
  // Made once: cuda::retainedPrimaryContext holds its own mutex across its driver call.
  const seam::KeepState keep;
  const std::string name = "the primary context of device " + std::to_string(device);
  auto primary = std::make_shared<Ctx>(
      Ctx{name, cuda::retainedPrimaryContext(driver_, device), true, false, device});
  DeviceState state{primary, makeStream("the executor's stream of device " + std::to_string(device),
                                        primary, CU_STREAM_NON_BLOCKING, 0)};
  return devices_.emplace(device, std::move(state)).first->second;
}

std::shared_ptr<Stream> CudaDriverExecutor::detour(const std::shared_ptr<Stream>& s,
                                                   CUdevice device, CallPoint point) {
  const std::shared_ptr<Stream> on = stateOf(device).own;
  recordFence(*s, point);
  ok(driver_.streamWaitEvent(on->handle, s->fence, 0), point,
     "cuStreamWaitEvent(" + streamLabel(*on) + ", the executor's event of " + streamLabel(*s) +
         ")");
  current(*on->ctx, point);
  return on;
}

void CudaDriverExecutor::rejoin(const std::shared_ptr<Stream>& s, const std::shared_ptr<Stream>& on,
                                CallPoint point) {
  if (on == s) return;
  recordFence(*on, point);
  ok(driver_.streamWaitEvent(s->handle, on->fence, 0), point,
     "cuStreamWaitEvent(" + streamLabel(*s) + ", the executor's event of " + streamLabel(*on) +
         ")");
}

std::shared_ptr<Stream> CudaDriverExecutor::reaching(const std::shared_ptr<Stream>& s,
                                                     const Buf& buf, CallPoint point) {
  if (buf.reachableFrom(s->ctx->device)) return s;
  // Any other touch of pool memory from another device is undefined.
  return detour(s, buf.pool->device, point);
}

std::shared_ptr<Stream> CudaDriverExecutor::helperOf(const std::shared_ptr<Ctx>& ctx) {
  if (ctx->primary) return stateOf(ctx->device).own;
  std::shared_ptr<Stream>& helper = helpers_[ctx.get()];
  if (!helper) {
    // Made once: the entry is shared by every name that launches in the context.
    const seam::KeepState keep;
    helper = makeStream("the executor's stream of " + ctx->name, ctx, CU_STREAM_NON_BLOCKING, 0);
  }
  return helper;
}

std::shared_ptr<Stream> CudaDriverExecutor::target(const std::string& name, CallPoint point) {
  const std::shared_ptr<Stream> s = named(streams_, name);
  const std::shared_ptr<Stream> on = s->orphan() ? own_ : s;
  current(*on->ctx, point);
  return on;
}

bool CudaDriverExecutor::keepsState(std::span<const std::string> names) const {
  // A primary context outlives every name: the executor keeps a retain of its own.
  const auto lent = [](const std::shared_ptr<Ctx>& ctx) { return !ctx->primary; };
  for (const std::string& name : names) {
    if (const auto s = streams_.find(name); s != streams_.end() && lent(s->second->ctx)) {
      return true;
    }
    if (const auto e = events_.find(name); e != events_.end() && lent(e->second->ctx)) return true;
    if (const auto g = graphs_.find(name); g != graphs_.end() && lent(g->second->ctx)) return true;
    if (const auto x = execs_.find(name); x != execs_.end() && lent(x->second->graph->ctx)) {
      return true;
    }
  }
  return false;
}

std::vector<std::shared_ptr<Stream>> CudaDriverExecutor::streamsNamed(
    std::span<const std::string> names) const {
  std::vector<std::shared_ptr<Stream>> found;
  for (const std::string& name : names) {
    if (const auto s = streams_.find(name); s != streams_.end()) found.push_back(s->second);
  }
  return found;
}

void CudaDriverExecutor::recordFence(Stream& stream, CallPoint point) {
  ++stream.records;
  ok(driver_.eventRecord(stream.fence, stream.handle), point,
     "cuEventRecord(the executor's event, " + streamLabel(stream) + ")");
}

void CudaDriverExecutor::order(LastUse& use, const std::shared_ptr<Stream>& stream,
                               CallPoint point) {
  // The last user changes only once `stream` waits for the one before: a failed wait keeps the
  // order a later wait needs.
  const std::shared_ptr<Stream> last = use.stream;
  // A destroyed context was synchronized before its cuCtxDestroy: its work is done.
  if (last && last != stream && !last->orphan()) {
    // `last` is another name's stream: its destroy must not come between the check and the calls.
    const seam::KeepState keep;
    if (!last->destroyed) recordFence(*last, point);
    ok(driver_.streamWaitEvent(stream->handle, last->fence, 0), point,
       "cuStreamWaitEvent(" + streamLabel(*stream) + ", the executor's event of " +
           streamLabel(*last) + ")");
  }
  use.stream = stream;
}

void CudaDriverExecutor::hostWait(LastUse& use, CallPoint point) {
  const std::shared_ptr<Stream> last = use.stream;
  if (last && !last->orphan()) {
    // `last` is another name's stream: its destroy must not come between the check and the record.
    std::optional<seam::KeepState> keep(std::in_place);
    if (!last->destroyed) recordFence(*last, point);
    // Holding `last` keeps its fence (pruneRetired), and only a ctx_destroy could end it.
    if (last->ctx->primary) keep.reset();
    ok(driver_.eventSynchronize(last->fence), point,
       "cuEventSynchronize(the executor's event of " + streamLabel(*last) + ")");
  }
  // Another mapping of a phys may have enqueued meanwhile: its work is still to wait for.
  if (use.stream == last) use.stream = nullptr;
}

// ---- The wait-completion oracle --------------------------------------------------------------

void CudaDriverExecutor::checkTickets(const std::vector<std::shared_ptr<Ticket>>& tickets,
                                      const std::string& wait) {
  for (const std::shared_ptr<Ticket>& t : tickets) {
    if (!t->ran.load()) {
      throw DeviceError(CallPoint::Sync,
                        wait + " returned before the " + t->what + " it waited for had run");
    }
  }
}

void CudaDriverExecutor::checkStreamDone(Stream& stream, bool query, const std::string& wait) {
  if (query) {
    const CUresult state = driver_.streamQuery(stream.handle);
    if (state != CUDA_SUCCESS) {
      throw DeviceError(CallPoint::Sync, wait + " returned while work it waited for was pending: " +
                                             "cuStreamQuery(" + streamLabel(stream) +
                                             "): " + driver_.errorName(state));
    }
  }
  checkTickets(stream.tickets, wait);
  for (const Stream::Waited& w : stream.waited) {
    const std::shared_ptr<Event> event = w.event.lock();
    // Another thread may have recorded the event again since: that record was not waited for.
    if (event && !event->destroyed && !event->orphan() && event->records == w.records) {
      const CUresult done = driver_.eventQuery(event->handle);
      if (done != CUDA_SUCCESS) {
        throw DeviceError(CallPoint::Sync, wait + " returned while event " + w.name + ", which " +
                                               streamLabel(stream) +
                                               " waited for, was pending: cuEventQuery(" + w.name +
                                               "): " + driver_.errorName(done));
      }
    }
    checkTickets(w.tickets, wait + " (through event " + w.name + ")");
  }
  stream.tickets.clear();
  stream.waited.clear();
}

void CudaDriverExecutor::pruneTickets() {
  std::erase_if(inFlight_, [](const std::shared_ptr<Ticket>& t) { return t->ran.load(); });
}

void CudaDriverExecutor::pruneRetired() {
  // Other threads' stream destroys extend retired_, and its fences are other names' streams'.
  const seam::KeepState keep;
  std::erase_if(retired_, [this](const std::shared_ptr<Stream>& s) {
    if (s.use_count() > 1) return false;
    // An event may be destroyed while its record is pending (cuEventDestroy); a destroyed
    // context took its events with it.
    if (!s->orphan()) driver_.eventDestroy(s->fence);
    return true;
  });
}

void CudaDriverExecutor::compare(const Shadow& shadow, const std::byte* got, size_t bytes,
                                 const std::string& what) {
  for (size_t i = 0; i < bytes && i < shadow.size(); ++i) {
    if (shadow[i] == kUnknown) continue;
    const auto is = std::to_integer<unsigned>(got[i]);
    if (is != static_cast<unsigned>(shadow[i])) {
      throw DataMismatch(what + " byte " + std::to_string(i) + " is " + hex(is) +
                         ", the operations wrote " + hex(static_cast<unsigned>(shadow[i])));
    }
  }
}

// ---- Contexts ----------------------------------------------------------------------------------

void CudaDriverExecutor::primaryRetain(const ModelCall& c) {
  const std::string& name = c.names[0];
  const CUdevice device = deviceArg(c);
  const CUcontext primary = stateOf(device).primary->handle;
  CUcontext handle = nullptr;
  ok(driver_.primaryCtxRetain(&handle, device), CallPoint::CtxCreate,
     "cuDevicePrimaryCtxRetain(" + name + ", device " + std::to_string(device) + ")");
  if (handle != primary) {
    throw DeviceError(CallPoint::CtxCreate,
                      "cuDevicePrimaryCtxRetain(" + name +
                          ") returned a context other than the device's primary context");
  }
  ctxs_[name] = std::make_shared<Ctx>(Ctx{name, handle, true, false, device});
}

void CudaDriverExecutor::ctxCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  static constexpr unsigned kSched[] = {CU_CTX_SCHED_AUTO, CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD,
                                        CU_CTX_SCHED_BLOCKING_SYNC};
  const CUdevice device = deviceArg(c);
  CUcontext handle = nullptr;
  ok(driver_.ctxCreate(&handle, kSched[c.arg("sched")], device), CallPoint::CtxCreate,
     "cuCtxCreate(" + name + ", device " + std::to_string(device) + ")");
  ctxs_[name] = std::make_shared<Ctx>(Ctx{name, handle, false, false, device});
}

void CudaDriverExecutor::ctxSync(const ModelCall& c) {
  // cuCtxSynchronize is invalid while a stream of the context captures, and the check walks other
  // names' streams: no capture and no other name's record may come between.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> ctx = named(ctxs_, c.names[0]);
  current(*ctx, CallPoint::Sync);
  const std::string wait = "cuCtxSynchronize(" + ctx->name + ")";
  ok(driver_.ctxSynchronize(), CallPoint::Sync, wait);
  // Every stream of the context, the executor's own among them for the primary context.
  std::vector<std::shared_ptr<Stream>> mine;
  for (const auto& [name, s] : streams_) {
    if (!s->orphan() && s->ctx->handle == ctx->handle) mine.push_back(s);
  }
  if (ctx->primary) mine.push_back(stateOf(ctx->device).own);
  // A busy stream's operation may enqueue after the wait began, from a thread the state lets go.
  for (const std::shared_ptr<Stream>& s : mine)
    checkStreamDone(*s, s->busy == 0, wait);
  for (const std::shared_ptr<Stream>& s : retired_) {
    if (!s->orphan() && s->ctx->handle == ctx->handle) checkTickets(s->tickets, wait);
  }
}

void CudaDriverExecutor::ctxDestroy(const ModelCall& c) {
  destroyCtx(c.names[0]);
}

void CudaDriverExecutor::destroyCtx(const std::string& name) {
  const std::shared_ptr<Ctx> ctx = take(ctxs_, name);
  if (ctx->primary) {
    // The executor's own retain keeps the primary context from being reset here, so its streams
    // and events stay valid.
    ok(driver_.primaryCtxRelease(ctx->device), CallPoint::CtxDestroy,
       "cuDevicePrimaryCtxRelease(" + name + ")");
    return;
  }
  // cuCtxDestroy ends objects that other names hold, and no call on them may meet it; those
  // operations keep the state as well (keepsState), so none is under way here.
  const seam::KeepState keep;
  // Peer access from and to it ends with it.
  std::erase_if(peers_, [&ctx](const auto& pair) {
    return pair.first == ctx.get() || pair.second == ctx.get();
  });
  // The documentation does not say what becomes of work still pending on the context's streams
  // (stream-ordered frees among it) at cuCtxDestroy, so the executor waits for it first.
  current(*ctx, CallPoint::CtxDestroy);
  ok(driver_.ctxSynchronize(), CallPoint::CtxDestroy,
     "cuCtxSynchronize(" + name + ", before its cuCtxDestroy)");
  ok(driver_.ctxDestroy(ctx->handle), CallPoint::CtxDestroy, "cuCtxDestroy(" + name + ")");
  // Its streams, events and graphs are orphans from now on (Stream::orphan).
  ctx->destroyed = true;
  helpers_.erase(ctx.get());
  pruneRetired();
}

// ---- Streams -----------------------------------------------------------------------------------

std::shared_ptr<Stream> CudaDriverExecutor::makeStream(const std::string& name,
                                                       const std::shared_ptr<Ctx>& ctx,
                                                       unsigned flags, int priority) {
  auto s = std::make_shared<Stream>();
  s->name = name;
  s->ctx = ctx;
  current(*ctx, CallPoint::CtxCreate);
  ok(driver_.streamCreateWithPriority(&s->handle, flags, priority), CallPoint::CtxCreate,
     "cuStreamCreateWithPriority(" + name + ")");
  const CUresult fence = driver_.eventCreate(&s->fence, CU_EVENT_DISABLE_TIMING);
  if (fence != CUDA_SUCCESS) {
    driver_.streamDestroy(s->handle);
    ok(fence, CallPoint::CtxCreate, "cuEventCreate(the executor's event of " + name + ")");
  }
  return s;
}

void CudaDriverExecutor::streamCreate(const ModelCall& c) {
  const std::shared_ptr<Ctx> ctx = named(ctxs_, c.names[0]);
  const std::string& name = c.names[1];
  current(*ctx, CallPoint::CtxCreate);
  int least = 0;
  int greatest = 0;
  ok(driver_.ctxGetStreamPriorityRange(&least, &greatest), CallPoint::CtxCreate,
     "cuCtxGetStreamPriorityRange(" + ctx->name + ")");
  const unsigned flags = c.word("flags") == "default" ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
  const int priority = c.word("priority") == "greatest" ? greatest : least;
  streams_[name] = makeStream(name, ctx, flags, priority);
}

void CudaDriverExecutor::streamSync(const ModelCall& c) {
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Sync);
  const std::string wait = "cuStreamSynchronize(" + c.names[0] + ")";
  const uint64_t records = s->records;
  ok(driver_.streamSynchronize(s->handle), CallPoint::Sync, wait);
  // The check reads events and tickets that other names' operations change.
  const seam::KeepState keep;
  checkStreamDone(*s, s->records == records, wait);
}

void CudaDriverExecutor::streamQuery(const ModelCall& c) {
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Sync);
  const CUresult state = driver_.streamQuery(s->handle);
  if (state != CUDA_ERROR_NOT_READY)
    ok(state, CallPoint::Sync, "cuStreamQuery(" + c.names[0] + ")");
}

void CudaDriverExecutor::streamDestroy(const ModelCall& c) {
  destroyStream(c.names[0]);
}

void CudaDriverExecutor::destroyStream(const std::string& name) {
  const std::shared_ptr<Stream> s = take(streams_, name);
  if (s->orphan()) return;  // gone with its context; the handle may not be passed again
  current(*s->ctx, CallPoint::CtxDestroy);
  // Its last work, for what memory it used next (order, hostWait). cuStreamDestroy with work
  // pending returns at once and the work still completes.
  recordFence(*s, CallPoint::CtxDestroy);
  // Marked before the call: other names' order() and hostWait() then stop recording on it.
  s->destroyed = true;
  ok(driver_.streamDestroy(s->handle), CallPoint::CtxDestroy, "cuStreamDestroy(" + name + ")");
  retired_.push_back(s);
  pruneRetired();
}

void CudaDriverExecutor::hostFunc(const ModelCall& c) {
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Launch);
  auto ticket = std::make_shared<Ticket>();
  ticket->what = "host function of host_func at " + std::to_string(c.ordinal) + " on " +
                 c.names[0] + " (#" + std::to_string(++ticketCount_) + ")";
  ok(driver_.launchHostFunc(s->handle, markRan, ticket.get()), CallPoint::Launch,
     "cuLaunchHostFunc(" + c.names[0] + ")");
  s->tickets.push_back(ticket);
  inFlight_.push_back(std::move(ticket));
}

// ---- Events ------------------------------------------------------------------------------------

void CudaDriverExecutor::eventCreate(const ModelCall& c) {
  const std::shared_ptr<Ctx> ctx = named(ctxs_, c.names[0]);
  const std::string& name = c.names[1];
  const std::string_view flags = c.word("flags");
  const unsigned bits = flags == "default"         ? CU_EVENT_DEFAULT
                        : flags == "blocking_sync" ? CU_EVENT_BLOCKING_SYNC
                                                   : CU_EVENT_DISABLE_TIMING;
  current(*ctx, CallPoint::CtxCreate);
  auto e = std::make_shared<Event>();
  e->name = name;
  e->ctx = ctx;
  ok(driver_.eventCreate(&e->handle, bits), CallPoint::CtxCreate, "cuEventCreate(" + name + ")");
  events_[name] = std::move(e);
}

void CudaDriverExecutor::eventRecord(const ModelCall& c) {
  const std::shared_ptr<Event> e = named(events_, c.names[0]);
  if (e->orphan()) return;  // gone with its context; the handle may not be passed again
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::Sync);
  const std::string call = "cuEventRecord(" + e->name + ", " + c.names[1] + ")";
  // Counted first: a stream's wait checked meanwhile must not query this newer record.
  ++e->records;
  const CUresult result = driver_.eventRecord(e->handle, s->handle);
  if (e->ctx->handle != s->ctx->handle) {
    // "hEvent and hStream must be from the same context otherwise CUDA_ERROR_INVALID_HANDLE is
    // returned": that code is the operation's result.
    if (result == CUDA_ERROR_INVALID_HANDLE) return;
    throw DeviceError(CallPoint::Sync, call + " of an event and a stream of different contexts: " +
                                           driver_.errorName(result) +
                                           ", the documentation says CUDA_ERROR_INVALID_HANDLE");
  }
  ok(result, CallPoint::Sync, call);
  e->tickets = s->tickets;
}

void CudaDriverExecutor::streamWaitEvent(const ModelCall& c) {
  const std::shared_ptr<Event> e = named(events_, c.names[1]);
  if (e->orphan()) return;  // gone with its context; the handle may not be passed again
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Sync);
  // The event may be of another context (cuStreamWaitEvent allows it).
  ok(driver_.streamWaitEvent(s->handle, e->handle, 0), CallPoint::Sync,
     "cuStreamWaitEvent(" + c.names[0] + ", " + e->name + ")");
  s->waited.push_back(Stream::Waited{e, e->name, e->tickets, e->records});
}

void CudaDriverExecutor::eventQuery(const ModelCall& c) {
  const std::shared_ptr<Event> e = named(events_, c.names[0]);
  if (e->orphan()) return;
  const CUresult state = driver_.eventQuery(e->handle);
  if (state != CUDA_ERROR_NOT_READY) ok(state, CallPoint::Sync, "cuEventQuery(" + e->name + ")");
}

void CudaDriverExecutor::eventSync(const ModelCall& c) {
  // Only operations naming the event record it or end it, so the check after needs no state kept.
  const std::shared_ptr<Event> e = named(events_, c.names[0]);
  if (e->orphan()) return;
  const std::string wait = "cuEventSynchronize(" + e->name + ")";
  ok(driver_.eventSynchronize(e->handle), CallPoint::Sync, wait);
  const CUresult state = driver_.eventQuery(e->handle);
  if (state != CUDA_SUCCESS) {
    throw DeviceError(CallPoint::Sync, wait +
                                           " returned while the work it waited for was pending: "
                                           "cuEventQuery(" +
                                           e->name + "): " + driver_.errorName(state));
  }
  checkTickets(e->tickets, wait);
}

void CudaDriverExecutor::eventDestroy(const ModelCall& c) {
  destroyEvent(c.names[0]);
}

void CudaDriverExecutor::destroyEvent(const std::string& name) {
  const std::shared_ptr<Event> e = take(events_, name);
  // Marked before the call: other streams' checks then stop querying it.
  e->destroyed = true;
  if (e->orphan()) return;
  // Destroying an event whose record is pending is defined: the call does not wait for it.
  ok(driver_.eventDestroy(e->handle), CallPoint::CtxDestroy, "cuEventDestroy(" + name + ")");
}

// ---- Pools and their allocations ---------------------------------------------------------------

void CudaDriverExecutor::poolCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  const CUdevice device = deviceArg(c);
  current(*stateOf(device).primary, CallPoint::CtxCreate);
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = device;
  auto p = std::make_shared<Pool>();
  p->name = name;
  p->device = device;
  ok(driver_.memPoolCreate(&p->handle, &props), CallPoint::CtxCreate,
     "cuMemPoolCreate(" + name + ")");
  pools_[name] = std::move(p);
}

void CudaDriverExecutor::poolSetThreshold(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = named(pools_, c.names[0]);
  const Pool& p = *pool;
  currentPrimary(CallPoint::BufAlloc);
  cuuint64_t set = c.arg("bytes");
  ok(driver_.memPoolSetAttribute(p.handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &set),
     CallPoint::BufAlloc, "cuMemPoolSetAttribute(" + p.name + ", RELEASE_THRESHOLD)");
  cuuint64_t got = 0;
  ok(driver_.memPoolGetAttribute(p.handle, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &got),
     CallPoint::BufAlloc, "cuMemPoolGetAttribute(" + p.name + ", RELEASE_THRESHOLD)");
  if (got != set) {
    throw DeviceError(CallPoint::BufAlloc,
                      "cuMemPoolGetAttribute(" + p.name + ", RELEASE_THRESHOLD) returned " +
                          std::to_string(got) + " after cuMemPoolSetAttribute set " +
                          std::to_string(set));
  }
}

void CudaDriverExecutor::poolTrim(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = named(pools_, c.names[0]);
  const Pool& p = *pool;
  currentPrimary(CallPoint::BufFree);
  ok(driver_.memPoolTrimTo(p.handle, c.arg("keep")), CallPoint::BufFree,
     "cuMemPoolTrimTo(" + p.name + ")");
}

void CudaDriverExecutor::poolDestroy(const ModelCall& c) {
  destroyPool(c.names[0]);
}

void CudaDriverExecutor::destroyPool(const std::string& name) {
  const std::shared_ptr<Pool> p = take(pools_, name);
  currentPrimary(CallPoint::CtxDestroy);
  // With allocations outstanding it returns at once, and the pool goes with the last of them
  // (documented): the allocations stay usable, and their frees on any stream are valid.
  ok(driver_.memPoolDestroy(p->handle), CallPoint::CtxDestroy, "cuMemPoolDestroy(" + name + ")");
}

void CudaDriverExecutor::alloc(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = named(pools_, c.names[0]);
  const Pool& p = *pool;
  // The pool may be of another device than the stream (documented): the allocation is the pool's.
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::BufAlloc);
  const std::string& name = c.names[2];
  auto b = std::make_shared<Buf>();
  b->name = name;
  b->pool = pool;
  b->bytes = c.arg("bytes");
  ok(driver_.memAllocFromPoolAsync(&b->address, b->bytes, p.handle, s->handle), CallPoint::BufAlloc,
     "cuMemAllocFromPoolAsync(" + name + ", " + p.name + ", " + c.names[1] + ")");
  // Work on another stream must be ordered after the allocation (documented).
  b->use.stream = s;
  b->shadow.assign(std::min(b->bytes, kShadowBytes), kUnknown);
  bufs_[name] = std::move(b);
}

void CudaDriverExecutor::free(const ModelCall& c) {
  freeBuf(c.names[0], target(c.names[1], CallPoint::BufFree));
}

void CudaDriverExecutor::freeBuf(const std::string& name, std::shared_ptr<Stream> stream) {
  const std::shared_ptr<Buf> b = take(bufs_, name);
  current(*stream->ctx, CallPoint::BufFree);
  order(b->use, stream, CallPoint::BufFree);
  ok(driver_.memFreeAsync(b->address, stream->handle), CallPoint::BufFree,
     "cuMemFreeAsync(" + name + ", " + streamLabel(*stream) + ")");
}

void CudaDriverExecutor::memset(const ModelCall& c) {
  const std::shared_ptr<Buf> buf = named(bufs_, c.names[0]);
  Buf& b = *buf;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToDevice);
  // A detour enqueues on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!b.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, b, CallPoint::CopyToDevice);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  order(b.use, on, CallPoint::CopyToDevice);
  ok(driver_.memsetD8Async(b.address, value, b.bytes, on->handle), CallPoint::CopyToDevice,
     "cuMemsetD8Async(" + b.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToDevice);
  std::fill(b.shadow.begin(), b.shadow.end(), static_cast<int16_t>(value));
}

void CudaDriverExecutor::memcpyDtoD(const ModelCall& c) {
  copyDevice(c, false);
}

void CudaDriverExecutor::memcpyPeer(const ModelCall& c) {
  copyDevice(c, true);
}

void CudaDriverExecutor::copyDevice(const ModelCall& c, bool peer) {
  const std::shared_ptr<Buf> dstBuf = named(bufs_, c.names[0]);
  const std::shared_ptr<Buf> srcBuf = named(bufs_, c.names[1]);
  Buf& dst = *dstBuf;
  Buf& src = *srcBuf;
  const std::shared_ptr<Stream> s = target(c.names[2], CallPoint::CopyToDevice);
  const size_t bytes = std::min(dst.bytes, src.bytes);
  order(dst.use, s, CallPoint::CopyToDevice);
  order(src.use, s, CallPoint::CopyToDevice);
  const std::string names = "(" + dst.name + ", " + src.name + ", " + c.names[2] + ")";
  const CUdevice device = s->ctx->device;
  if (!peer && dst.reachableFrom(device) && src.reachableFrom(device)) {
    ok(driver_.memcpyDtoDAsync(dst.address, src.address, bytes, s->handle), CallPoint::CopyToDevice,
       "cuMemcpyDtoDAsync" + names);
  } else {
    // A peer copy needs no access between the devices: asked for, or memory the stream's device
    // may not touch. Pool memory belongs to no context: each side names its device's primary
    // context, which the executor keeps retained.
    ok(driver_.memcpyPeerAsync(dst.address, stateOf(dst.pool->device).primary->handle, src.address,
                               stateOf(src.pool->device).primary->handle, bytes, s->handle),
       CallPoint::CopyToDevice, "cuMemcpyPeerAsync" + names);
  }
  std::copy_n(src.shadow.begin(), std::min(bytes, kShadowBytes), dst.shadow.begin());
}

void CudaDriverExecutor::readBack(const std::shared_ptr<Stream>& stream, CUdeviceptr src,
                                  size_t bytes, const Shadow& shadow, const std::string& call,
                                  const std::string& what) {
  std::vector<std::byte> got(bytes);
  ok(driver_.memcpyDtoHAsync(got.data(), src, bytes, stream->handle), CallPoint::CopyToHost, call);
  const std::string wait = "cuStreamSynchronize(" + streamLabel(*stream) + ")";
  const uint64_t records = stream->records;
  ok(driver_.streamSynchronize(stream->handle), CallPoint::CopyToHost, wait);
  {
    // The check reads events and tickets that other names' operations change.
    const seam::KeepState keep;
    checkStreamDone(*stream, stream->records == records, wait);
  }
  compare(shadow, got.data(), bytes, what);
}

void CudaDriverExecutor::read(const ModelCall& c) {
  const std::shared_ptr<Buf> buf = named(bufs_, c.names[0]);
  Buf& b = *buf;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToHost);
  // A detour reads on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!b.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, b, CallPoint::CopyToHost);
  order(b.use, on, CallPoint::CopyToHost);
  const size_t bytes = std::min(b.bytes, kShadowBytes);
  readBack(on, b.address, bytes, b.shadow, "cuMemcpyDtoHAsync(" + b.name + ", " + c.names[1] + ")",
           "buf " + b.name);
}

// ---- Across devices ----------------------------------------------------------------------------

void CudaDriverExecutor::peerEnable(const ModelCall& c) {
  // peers_ is kept by context, whatever the names: another pair of names for the same contexts
  // must not enable or disable between this call and its record.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> fromCtx = named(ctxs_, c.names[0]);
  const std::shared_ptr<Ctx> toCtx = named(ctxs_, c.names[1]);
  const Ctx& from = *fromCtx;
  const Ctx& to = *toCtx;
  int can = 0;
  ok(driver_.deviceCanAccessPeer(&can, from.device, to.device), CallPoint::CtxCreate,
     "cuDeviceCanAccessPeer(" + from.name + ", " + to.name + ")");
  current(from, CallPoint::CtxCreate);
  const std::string call = "cuCtxEnablePeerAccess(" + from.name + " to " + to.name + ")";
  const CUresult result = driver_.ctxEnablePeerAccess(to.handle, 0);
  const auto pair = std::make_pair(identity(from), identity(to));
  CUresult expected = CUDA_SUCCESS;
  if (from.handle == to.handle) {
    // Two retains of one primary context: "CUDA_ERROR_INVALID_CONTEXT if ... the current context
    // is peerContext". A device is never its own peer either, so where cuDeviceCanAccessPeer
    // says 0 the documented CUDA_ERROR_PEER_ACCESS_UNSUPPORTED is as right: the documentation
    // orders neither check, and NVIDIA's driver 580 returns that one.
    expected = CUDA_ERROR_INVALID_CONTEXT;
    if (can == 0 && result == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED) return;
  } else if (can == 0) {
    // Two contexts of one device, or devices without peer access: the documentation names
    // CUDA_ERROR_PEER_ACCESS_UNSUPPORTED where cuDeviceCanAccessPeer says no, but not what a
    // device and itself get. Any error is the operation's result; success is the finding.
    if (result != CUDA_SUCCESS) return;
    throw DeviceError(CallPoint::CtxCreate, call + ": CUDA_SUCCESS where cuDeviceCanAccessPeer(" +
                                                from.name + ", " + to.name + ") said 0");
  } else if (peers_.contains(pair)) {
    expected = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  if (result != expected) {
    throw DeviceError(CallPoint::CtxCreate, call + ": " + driver_.errorName(result) +
                                                ", the documentation says " +
                                                driver_.errorName(expected));
  }
  if (expected == CUDA_SUCCESS) peers_.insert(pair);
}

void CudaDriverExecutor::peerDisable(const ModelCall& c) {
  // As peerEnable: the expected result depends on peers_, which other names change.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> fromCtx = named(ctxs_, c.names[0]);
  const std::shared_ptr<Ctx> toCtx = named(ctxs_, c.names[1]);
  const Ctx& from = *fromCtx;
  const Ctx& to = *toCtx;
  current(from, CallPoint::CtxDestroy);
  const std::string call = "cuCtxDisablePeerAccess(" + from.name + " to " + to.name + ")";
  const CUresult result = driver_.ctxDisablePeerAccess(to.handle);
  if (from.handle == to.handle) {
    // A context and itself: never enabled, and not a peer either; the documentation gives both
    // CUDA_ERROR_PEER_ACCESS_NOT_ENABLED and CUDA_ERROR_INVALID_CONTEXT. Any error is the result.
    if (result != CUDA_SUCCESS) return;
    throw DeviceError(CallPoint::CtxDestroy, call + ": CUDA_SUCCESS for a context and itself");
  }
  const auto pair = std::make_pair(identity(from), identity(to));
  const CUresult expected =
      peers_.contains(pair) ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  if (result != expected) {
    throw DeviceError(CallPoint::CtxDestroy, call + ": " + driver_.errorName(result) +
                                                 ", the documentation says " +
                                                 driver_.errorName(expected));
  }
  peers_.erase(pair);
}

void CudaDriverExecutor::poolAccess(const ModelCall& c) {
  const std::shared_ptr<Pool> pool = named(pools_, c.names[0]);
  const std::shared_ptr<Ctx> held = named(ctxs_, c.names[1]);
  Pool& p = *pool;
  const Ctx& ctx = *held;
  // The pool's own device always has access; the documentation does not say what setting it
  // again does, so the executor makes no call for it.
  if (ctx.device == p.device) return;
  int can = 0;
  ok(driver_.deviceCanAccessPeer(&can, ctx.device, p.device), CallPoint::BufAlloc,
     "cuDeviceCanAccessPeer(" + ctx.name + ", " + p.name + ")");
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = ctx.device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const std::string call =
      "cuMemPoolSetAccess(" + p.name + ", read-write for the device of " + ctx.name + ")";
  const CUresult result = driver_.memPoolSetAccess(p.handle, &access, 1);
  if (can == 0 && result != CUDA_SUCCESS) return;  // no peer access: its error is the result
  ok(result, CallPoint::BufAlloc, call);
  // Recorded once the call returned: other names' work may go to that device from then on.
  p.access.insert(ctx.device);
}

// ---- Pinned host memory ------------------------------------------------------------------------

void CudaDriverExecutor::hostAlloc(const ModelCall& c) {
  const std::string& name = c.names[0];
  // Portable, in the primary context that the executor keeps: no context destroy frees it.
  currentPrimary(CallPoint::BufAlloc);
  auto h = std::make_shared<HostBuf>();
  h->name = name;
  h->bytes = c.arg("bytes");
  void* host = nullptr;
  ok(driver_.memHostAlloc(&host, h->bytes, CU_MEMHOSTALLOC_PORTABLE), CallPoint::BufAlloc,
     "cuMemHostAlloc(" + name + ")");
  h->host = static_cast<std::byte*>(host);
  std::memset(h->host, 0, h->bytes);
  h->shadow.assign(h->bytes, 0);
  hostBufs_[name] = std::move(h);
}

void CudaDriverExecutor::hostFill(const ModelCall& c) {
  const std::shared_ptr<HostBuf> host = named(hostBufs_, c.names[0]);
  HostBuf& h = *host;
  // A host write while a copy of it is pending is a data race: the executor waits first.
  currentPrimary(CallPoint::Sync);
  hostWait(h.use, CallPoint::Sync);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  std::memset(h.host, value, h.bytes);
  std::fill(h.shadow.begin(), h.shadow.end(), static_cast<int16_t>(value));
}

void CudaDriverExecutor::memcpyHtoD(const ModelCall& c) {
  const std::shared_ptr<Buf> dstBuf = named(bufs_, c.names[0]);
  const std::shared_ptr<HostBuf> srcHost = named(hostBufs_, c.names[1]);
  Buf& dst = *dstBuf;
  HostBuf& src = *srcHost;
  const std::shared_ptr<Stream> s = target(c.names[2], CallPoint::CopyToDevice);
  // A detour copies on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!dst.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, dst, CallPoint::CopyToDevice);
  const size_t bytes = std::min(dst.bytes, src.bytes);
  order(dst.use, on, CallPoint::CopyToDevice);
  order(src.use, on, CallPoint::CopyToDevice);
  ok(driver_.memcpyHtoDAsync(dst.address, src.host, bytes, on->handle), CallPoint::CopyToDevice,
     "cuMemcpyHtoDAsync(" + dst.name + ", " + src.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToDevice);
  std::copy_n(src.shadow.begin(), std::min(bytes, kShadowBytes), dst.shadow.begin());
}

void CudaDriverExecutor::memcpyDtoH(const ModelCall& c) {
  const std::shared_ptr<HostBuf> dstHost = named(hostBufs_, c.names[0]);
  const std::shared_ptr<Buf> srcBuf = named(bufs_, c.names[1]);
  HostBuf& dst = *dstHost;
  Buf& src = *srcBuf;
  const std::shared_ptr<Stream> s = target(c.names[2], CallPoint::CopyToHost);
  // A detour copies on the executor's stream of the pool's device, which every name shares.
  const seam::KeepState keep(!src.reachableFrom(s->ctx->device));
  const std::shared_ptr<Stream> on = reaching(s, src, CallPoint::CopyToHost);
  const size_t bytes = std::min(dst.bytes, src.bytes);
  order(dst.use, on, CallPoint::CopyToHost);
  order(src.use, on, CallPoint::CopyToHost);
  ok(driver_.memcpyDtoHAsync(dst.host, src.address, bytes, on->handle), CallPoint::CopyToHost,
     "cuMemcpyDtoHAsync(" + dst.name + ", " + src.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToHost);
  std::copy_n(src.shadow.begin(), std::min(bytes, kShadowBytes), dst.shadow.begin());
}

void CudaDriverExecutor::hostCheck(const ModelCall& c) {
  const std::shared_ptr<HostBuf> host = named(hostBufs_, c.names[0]);
  HostBuf& h = *host;
  // Reading host memory a copy still writes is a data race: the executor waits first.
  currentPrimary(CallPoint::CopyToHost);
  hostWait(h.use, CallPoint::CopyToHost);
  compare(h.shadow, h.host, h.bytes, "hostbuf " + h.name);
}

void CudaDriverExecutor::hostFree(const ModelCall& c) {
  freeHost(c.names[0]);
}

void CudaDriverExecutor::freeHost(const std::string& name) {
  const std::shared_ptr<HostBuf> h = take(hostBufs_, name);
  // Freeing pinned memory a pending copy still uses is undefined: the executor waits first.
  currentPrimary(CallPoint::BufFree);
  hostWait(h->use, CallPoint::BufFree);
  ok(driver_.memFreeHost(h->host), CallPoint::BufFree, "cuMemFreeHost(" + name + ")");
}

// ---- Graphs ------------------------------------------------------------------------------------

void CudaDriverExecutor::graphCapture(const ModelCall& c) {
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Launch);
  const std::string& name = c.names[1];
  auto g = std::make_shared<Graph>();
  g->name = name;
  g->ctx = s->ctx;
  g->value = static_cast<uint8_t>(c.arg("value"));
  const size_t bytes = c.arg("bytes");
  // The slot the graph's copy node writes: portable pinned memory of the primary context, so that
  // no context destroy frees it under a launch.
  currentPrimary(CallPoint::Launch);
  void* host = nullptr;
  ok(driver_.memHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE), CallPoint::Launch,
     "cuMemHostAlloc(the slot of " + name + ")");
  g->slot = std::make_shared<GraphSlot>(GraphSlot{static_cast<std::byte*>(host), bytes, {}, false});
  // While the stream captures, no other name may record on it (order, hostWait) nor synchronize
  // its context (ctx_sync): those keep the state too, so none is under way here.
  const seam::KeepState keep;
  current(*s->ctx, CallPoint::Launch);
  ok(driver_.streamBeginCapture(s->handle, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CallPoint::Launch,
     "cuStreamBeginCapture(" + streamLabel(*s) + ")");
  // An allocation node, a memset node, a copy to the slot and a free node.
  const auto captured = [&]() -> std::pair<CUresult, std::string> {
    CUdeviceptr address = 0;
    CUresult r = driver_.memAllocAsync(&address, bytes, s->handle);
    if (r != CUDA_SUCCESS) return {r, "cuMemAllocAsync"};
    r = driver_.memsetD8Async(address, g->value, bytes, s->handle);
    if (r != CUDA_SUCCESS) return {r, "cuMemsetD8Async"};
    r = driver_.memcpyDtoHAsync(host, address, bytes, s->handle);
    if (r != CUDA_SUCCESS) return {r, "cuMemcpyDtoHAsync"};
    return {driver_.memFreeAsync(address, s->handle), "cuMemFreeAsync"};
  }();
  const CUresult ended = driver_.streamEndCapture(s->handle, &g->handle);
  if ((captured.first != CUDA_SUCCESS || ended != CUDA_SUCCESS) && g->handle != nullptr) {
    driver_.graphDestroy(g->handle);
  }
  if (captured.first != CUDA_SUCCESS) {
    driver_.memFreeHost(host);
    ok(captured.first, CallPoint::Launch,
       captured.second + " (captured on " + streamLabel(*s) + " for " + name + ")");
  }
  if (ended != CUDA_SUCCESS) driver_.memFreeHost(host);
  ok(ended, CallPoint::Launch, "cuStreamEndCapture(" + streamLabel(*s) + ", " + name + ")");
  graphs_[name] = std::move(g);
}

void CudaDriverExecutor::graphInstantiate(const ModelCall& c) {
  const std::shared_ptr<Graph> g = named(graphs_, c.names[0]);
  const std::string& name = c.names[1];
  auto x = std::make_shared<GraphExec>();
  x->name = name;
  x->graph = g;
  execs_[name] = x;
  if (g->orphan()) return;  // its context is gone; nothing of it may be used
  // Another name's graph_exec_destroy may end a live executable graph meanwhile; with none live,
  // only operations naming the graph change liveExecs.
  const seam::KeepState keep(g->liveExecs > 0);
  current(*g->ctx, CallPoint::Launch);
  const std::string call = "cuGraphInstantiate(" + name + ", " + g->name + ")";
  CUgraphExec handle = nullptr;
  const CUresult result = driver_.graphInstantiate(&handle, g->handle, 0);
  if (g->liveExecs > 0 && g->liveExecs == g->ending) {
    // Every live one is being destroyed beside this call: either answer is right.
    if (result != CUDA_SUCCESS) return;
  } else if (g->liveExecs > 0) {
    // "If hGraph contains any allocation or free nodes, there can be at most one executable graph
    // in existence for that graph at a time. An attempt to instantiate a second executable graph
    // before destroying the first ... will result in an error." No code is given: any error is
    // the operation's result, and success is the finding.
    if (result != CUDA_SUCCESS) return;
    driver_.graphExecDestroy(handle);
    throw DeviceError(CallPoint::Launch,
                      call +
                          ": CUDA_SUCCESS for a second executable graph of a graph with "
                          "allocation nodes, which the documentation says is an error");
  }
  ok(result, CallPoint::Launch, call);
  x->handle = handle;
  ++g->liveExecs;
}

void CudaDriverExecutor::graphLaunch(const ModelCall& c) {
  const std::shared_ptr<GraphExec> exec = named(execs_, c.names[0]);
  const GraphExec& x = *exec;
  if (x.handle == nullptr || x.graph->orphan()) return;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::Launch);
  const std::shared_ptr<Graph> graph = x.graph;
  Graph& g = *graph;
  // Live while `x` is: freeSlotIfUnused waits for the graph's last executable graph.
  const std::shared_ptr<GraphSlot> slot = g.slot;
  const std::string call = "cuGraphLaunch(" + x.name + ", " + c.names[1] + ")";
  if (s->ctx->handle == g.ctx->handle) {
    order(slot->use, s, CallPoint::Launch);
    ok(driver_.graphLaunch(x.handle, s->handle), CallPoint::Launch, call);
  } else {
    // The executor's stream in the graph's context is shared by every name launching there.
    const seam::KeepState keep;
    // The documentation does not say that a stream of another context than the graph's may
    // launch it, and drivers refuse that ("CUDA Stream does not belong to the expected context").
    // The executor launches on a stream of its own in the graph's context instead, ordered
    // after the stream's work, and the stream waits for the launch: the same order, defined.
    const std::shared_ptr<Stream> helper = helperOf(g.ctx);
    recordFence(*s, CallPoint::Launch);
    ok(driver_.streamWaitEvent(helper->handle, s->fence, 0), CallPoint::Launch,
       "cuStreamWaitEvent(" + streamLabel(*helper) + ", the executor's event of " + s->name + ")");
    current(*g.ctx, CallPoint::Launch);
    order(slot->use, helper, CallPoint::Launch);
    ok(driver_.graphLaunch(x.handle, helper->handle), CallPoint::Launch,
       call + " (on " + streamLabel(*helper) + ")");
    recordFence(*helper, CallPoint::Launch);
    ok(driver_.streamWaitEvent(s->handle, helper->fence, 0), CallPoint::Launch,
       "cuStreamWaitEvent(" + s->name + ", the executor's event of " + streamLabel(*helper) + ")");
  }
  slot->launched = true;
}

void CudaDriverExecutor::graphExecDestroy(const ModelCall& c) {
  destroyExec(c.names[0]);
}

void CudaDriverExecutor::destroyExec(const std::string& name) {
  const std::shared_ptr<GraphExec> x = take(execs_, name);
  if (x->handle == nullptr || x->graph->orphan()) return;
  const std::shared_ptr<Graph> graph = x->graph;
  Graph& g = *graph;
  current(*g.ctx, CallPoint::CtxDestroy);
  {
    // Counted live until the slot is read: graph_destroy of another thread frees it only after.
    // Meanwhile graphInstantiate sees the destroy under way (Graph::ending).
    struct Ending {
      Graph& of;
      bool gone = false;
      ~Ending() {
        --of.ending;
        if (gone) --of.liveExecs;
      }
    } ending{g};
    ++g.ending;
    // An executable graph destroyed while a launch is in flight is freed once it completes.
    ok(driver_.graphExecDestroy(x->handle), CallPoint::CtxDestroy,
       "cuGraphExecDestroy(" + name + ")");
    ending.gone = true;
    // Every launch wrote the graph's value through its copy node.
    const std::shared_ptr<GraphSlot> slot = g.slot;
    currentPrimary(CallPoint::CopyToHost);
    hostWait(slot->use, CallPoint::CopyToHost);
    if (slot->launched) {
      compare(Shadow(slot->bytes, g.value), slot->host, slot->bytes,
              "the slot of graph " + g.name + " (launched by " + name + ")");
    }
  }
  freeSlotIfUnused(g);
}

void CudaDriverExecutor::graphDestroy(const ModelCall& c) {
  destroyGraph(c.names[0]);
}

void CudaDriverExecutor::destroyGraph(const std::string& name) {
  const std::shared_ptr<Graph> g = take(graphs_, name);
  // Marked before the calls: its last executable graph's destroy may free the slot meanwhile.
  g->destroyed = true;
  if (g->orphan()) return;
  // Its executable graphs are independent of it and stay usable.
  current(*g->ctx, CallPoint::CtxDestroy);
  ok(driver_.graphDestroy(g->handle), CallPoint::CtxDestroy, "cuGraphDestroy(" + name + ")");
  freeSlotIfUnused(*g);
}

void CudaDriverExecutor::freeSlotIfUnused(Graph& g) {
  if (!g.destroyed || g.liveExecs > 0 || !g.slot) return;
  // Taken before the calls: the graph's destroy and its last executable graph's may both get here.
  const std::shared_ptr<GraphSlot> slot = std::move(g.slot);
  currentPrimary(CallPoint::BufFree);
  hostWait(slot->use, CallPoint::BufFree);
  ok(driver_.memFreeHost(slot->host), CallPoint::BufFree,
     "cuMemFreeHost(the slot of " + g.name + ")");
}

// ---- Virtual memory ----------------------------------------------------------------------------

void CudaDriverExecutor::vaReserve(const ModelCall& c) {
  const std::string& name = c.names[0];
  currentPrimary(CallPoint::BufAlloc);
  auto v = std::make_shared<Va>();
  v->name = name;
  v->granules = c.arg("granules");
  ok(driver_.memAddressReserve(&v->base, v->granules * granularity_, granularity_, 0, 0),
     CallPoint::BufAlloc, "cuMemAddressReserve(" + name + ")");
  v->slots.resize(v->granules);
  vas_[name] = std::move(v);
}

void CudaDriverExecutor::memCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  currentPrimary(CallPoint::BufAlloc);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  auto m = std::make_shared<Phys>();
  m->name = name;
  ok(driver_.memCreate(&m->handle, granularity_, &prop, 0), CallPoint::BufAlloc,
     "cuMemCreate(" + name + ")");
  m->shadow.assign(std::min(granularity_, kShadowBytes), kUnknown);
  physs_[name] = std::move(m);
}

void CudaDriverExecutor::memMap(const ModelCall& c) {
  const std::shared_ptr<Va> va = named(vas_, c.names[0]);
  Va& v = *va;
  const std::shared_ptr<Phys> m = named(physs_, c.names[1]);
  const std::string& name = c.names[2];
  currentPrimary(CallPoint::BufAlloc);
  auto a = std::make_shared<Mapping>();
  a->name = name;
  a->phys = m;
  // cuMemMap maps only where nothing is mapped: the first free granule of the va, or, when it
  // has none, a range reserved for this mapping alone. An index, not an iterator, is kept across
  // the calls.
  const auto slot =
      static_cast<size_t>(std::find(v.slots.begin(), v.slots.end(), nullptr) - v.slots.begin());
  if (slot < v.slots.size()) {
    a->address = v.base + slot * granularity_;
  } else {
    a->ownRange = true;
    ok(driver_.memAddressReserve(&a->address, granularity_, granularity_, 0, 0),
       CallPoint::BufAlloc, "cuMemAddressReserve(a range of its own for " + name + ")");
  }
  const std::string call = "(" + name + ", " + v.name + ", " + m->name + ")";
  const CUresult mapped = driver_.memMap(a->address, granularity_, 0, m->handle, 0);
  if (mapped != CUDA_SUCCESS && a->ownRange) driver_.memAddressFree(a->address, granularity_);
  ok(mapped, CallPoint::BufAlloc, "cuMemMap" + call);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  const CUresult set = driver_.memSetAccess(a->address, granularity_, &access, 1);
  if (set != CUDA_SUCCESS) {
    driver_.memUnmap(a->address, granularity_);
    if (a->ownRange) driver_.memAddressFree(a->address, granularity_);
    ok(set, CallPoint::BufAlloc, "cuMemSetAccess" + call);
  }
  if (!a->ownRange) v.slots[slot] = a;
  mappings_[name] = std::move(a);
}

void CudaDriverExecutor::mapMemset(const ModelCall& c) {
  // The phys's last use and shadow are shared by all its mappings, and another name's va_free may
  // unmap this one: the check, the order and the work go together.
  const seam::KeepState keep;
  const std::shared_ptr<Mapping> mapping = named(mappings_, c.names[0]);
  Mapping& a = *mapping;
  // A mapping unmapped with its va's free has no memory behind it any more.
  if (a.unmapped) return;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToDevice);
  // Mappings give access to the executor's device only (cuMemSetAccess in mem_map).
  const std::shared_ptr<Stream> on =
      s->ctx->device == device_ ? s : detour(s, device_, CallPoint::CopyToDevice);
  Phys& m = *a.phys;
  const size_t bytes = std::min<size_t>(c.arg("bytes"), granularity_);
  const auto value = static_cast<uint8_t>(c.arg("value"));
  order(m.use, on, CallPoint::CopyToDevice);
  ok(driver_.memsetD8Async(a.address, value, bytes, on->handle), CallPoint::CopyToDevice,
     "cuMemsetD8Async(" + a.name + ", " + streamLabel(*on) + ")");
  rejoin(s, on, CallPoint::CopyToDevice);
  std::fill_n(m.shadow.begin(), std::min(bytes, m.shadow.size()), static_cast<int16_t>(value));
}

void CudaDriverExecutor::mapRead(const ModelCall& c) {
  // As mapMemset: the phys is shared by its mappings, and va_free may unmap this one.
  const seam::KeepState keep;
  const std::shared_ptr<Mapping> mapping = named(mappings_, c.names[0]);
  Mapping& a = *mapping;
  if (a.unmapped) return;
  const std::shared_ptr<Stream> s = target(c.names[1], CallPoint::CopyToHost);
  const std::shared_ptr<Stream> on =
      s->ctx->device == device_ ? s : detour(s, device_, CallPoint::CopyToHost);
  Phys& m = *a.phys;
  const size_t bytes = std::min({static_cast<size_t>(c.arg("bytes")), granularity_, kShadowBytes});
  order(m.use, on, CallPoint::CopyToHost);
  readBack(on, a.address, bytes, m.shadow, "cuMemcpyDtoHAsync(" + a.name + ", " + c.names[1] + ")",
           "mapping " + a.name + " of " + m.name);
}

void CudaDriverExecutor::memUnmap(const ModelCall& c) {
  const std::shared_ptr<Mapping> a = take(mappings_, c.names[0]);
  unmap(*a, nullptr);
}

void CudaDriverExecutor::unmap(Mapping& a, Va* va) {
  // mem_unmap and its va's va_free are different names: one unmaps, and the range is freed only
  // after. The phys's last use is shared by its mappings.
  const seam::KeepState keep;
  if (a.unmapped) return;
  currentPrimary(CallPoint::BufFree);
  // Unmapping memory that pending work still reaches is undefined: the executor waits first.
  hostWait(a.phys->use, CallPoint::BufFree);
  ok(driver_.memUnmap(a.address, granularity_), CallPoint::BufFree, "cuMemUnmap(" + a.name + ")");
  a.unmapped = true;
  if (a.ownRange) {
    ok(driver_.memAddressFree(a.address, granularity_), CallPoint::BufFree,
       "cuMemAddressFree(the range of " + a.name + ")");
    return;
  }
  for (auto& [name, v] : vas_) {
    if (va != nullptr && v.get() != va) continue;
    std::replace_if(
        v->slots.begin(), v->slots.end(),
        [&a](const std::shared_ptr<Mapping>& slot) { return slot.get() == &a; }, nullptr);
  }
}

void CudaDriverExecutor::vaFree(const ModelCall& c) {
  freeVa(c.names[0]);
}

void CudaDriverExecutor::freeVa(const std::string& name) {
  const std::shared_ptr<Va> v = take(vas_, name);
  // The documentation does not say what cuMemAddressFree does to mappings in the range: the
  // executor unmaps them first, and their names map nothing from then on.
  for (const std::shared_ptr<Mapping>& a : std::vector(v->slots)) {
    if (a) unmap(*a, v.get());
  }
  currentPrimary(CallPoint::BufFree);
  ok(driver_.memAddressFree(v->base, v->granules * granularity_), CallPoint::BufFree,
     "cuMemAddressFree(" + name + ")");
}

void CudaDriverExecutor::memRelease(const ModelCall& c) {
  releasePhys(c.names[0]);
}

void CudaDriverExecutor::releasePhys(const std::string& name) {
  const std::shared_ptr<Phys> m = take(physs_, name);
  currentPrimary(CallPoint::BufFree);
  // Mappings of it keep the memory until they are unmapped (documented).
  ok(driver_.memRelease(m->handle), CallPoint::BufFree, "cuMemRelease(" + name + ")");
}

}  // namespace

std::unique_ptr<ModelExecutor> makeCudaDriverExecutor(std::string_view backend, int ordinal) {
  return std::make_unique<CudaDriverExecutor>(backend, ordinal);
}

}  // namespace gpufuzz
