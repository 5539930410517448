// CudaDriverExecutor.cpp: each operation of the cuda-driver model as driver calls: the table, the
// orders and waits the executor adds, the wait-completion oracle, contexts, streams and events.
// The other handlers are in CudaMemoryOps.cpp, CudaGraphOps.cpp and CudaVirtualMemoryOps.cpp.
#include "renderer/cuda/CudaDriverExecutor.h"

#include <algorithm>
#include <optional>

#include "renderer/cuda/CudaCalls.h"
#include "renderer/cuda/CudaDriverExecutorImpl.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace cudamodel {

namespace {

std::string hex(unsigned value) {
  constexpr const char* kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[(value >> 4) & 15] + kDigits[value & 15];
}

void CUDA_CB markRan(void* ticket) {
  static_cast<Ticket*>(ticket)->ran.store(true);
}

}  // namespace

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

const kit::OpTable<CudaDriverExecutor>& CudaDriverExecutor::table() {
  using E = CudaDriverExecutor;
  // free, a buf's ending operation, also takes a stream, so buf has no default release.
  static const kit::OpTable<E> table{
      kOwner,
      "cuda-driver",
      {
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
      },
      {{"buf", &E::releaseBuf}},
  };
  return table;
}

void CudaDriverExecutor::run(const ModelCall& call) {
  const kit::OpTable<CudaDriverExecutor>::Op& op = table().at(call.op);
  pruneTickets();
  // Another name's ctx_destroy may end such objects, and cuCtxDestroy must meet no call on them.
  const seam::KeepState keep(keepsState(call.names));
  const Busy busy(streamsNamed(call.names));
  (this->*op.handler)(call);
}

void CudaDriverExecutor::release(std::string_view kind, const std::string& name) {
  // As in run(): a failed operation's names are released while other threads still run.
  const seam::KeepState keep(keepsState(std::span(&name, 1)));
  table().release(*this, releases_, kind, name);
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
  kit::LeakReport held;
  for (const std::shared_ptr<Ticket>& t : inFlight_) {
    if (!t->ran.load()) held.add(t->what + " never ran");
  }
  pruneTickets();
  return held.text();
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
  const std::shared_ptr<Stream> s = streams_.named(name);
  const std::shared_ptr<Stream> on = s->orphan() ? own_ : s;
  current(*on->ctx, point);
  return on;
}

bool CudaDriverExecutor::keepsState(std::span<const std::string> names) const {
  // A primary context outlives every name: the executor keeps a retain of its own.
  const auto lent = [](const std::shared_ptr<Ctx>& ctx) { return !ctx->primary; };
  for (const std::string& name : names) {
    if (const auto* s = streams_.find(name); s != nullptr && lent((*s)->ctx)) return true;
    if (const auto* e = events_.find(name); e != nullptr && lent((*e)->ctx)) return true;
    if (const auto* g = graphs_.find(name); g != nullptr && lent((*g)->ctx)) return true;
    if (const auto* x = execs_.find(name); x != nullptr && lent((*x)->graph->ctx)) return true;
  }
  return false;
}

std::vector<std::shared_ptr<Stream>> CudaDriverExecutor::streamsNamed(
    std::span<const std::string> names) const {
  std::vector<std::shared_ptr<Stream>> found;
  for (const std::string& name : names) {
    if (const auto* s = streams_.find(name)) found.push_back(*s);
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
  ctxs_.add(name, std::make_shared<Ctx>(Ctx{name, handle, true, false, device}));
}

void CudaDriverExecutor::ctxCreate(const ModelCall& c) {
  const std::string& name = c.names[0];
  static constexpr unsigned kSched[] = {CU_CTX_SCHED_AUTO, CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD,
                                        CU_CTX_SCHED_BLOCKING_SYNC};
  const CUdevice device = deviceArg(c);
  CUcontext handle = nullptr;
  ok(driver_.ctxCreate(&handle, kSched[c.arg("sched")], device), CallPoint::CtxCreate,
     "cuCtxCreate(" + name + ", device " + std::to_string(device) + ")");
  ctxs_.add(name, std::make_shared<Ctx>(Ctx{name, handle, false, false, device}));
}

void CudaDriverExecutor::ctxSync(const ModelCall& c) {
  // cuCtxSynchronize is invalid while a stream of the context captures, and the check walks other
  // names' streams: no capture and no other name's record may come between.
  const seam::KeepState keep;
  const std::shared_ptr<Ctx> ctx = ctxs_.named(c.names[0]);
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
  const std::shared_ptr<Ctx> ctx = ctxs_.take(name);
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
  const std::shared_ptr<Ctx> ctx = ctxs_.named(c.names[0]);
  const std::string& name = c.names[1];
  current(*ctx, CallPoint::CtxCreate);
  int least = 0;
  int greatest = 0;
  ok(driver_.ctxGetStreamPriorityRange(&least, &greatest), CallPoint::CtxCreate,
     "cuCtxGetStreamPriorityRange(" + ctx->name + ")");
  const unsigned flags = c.word("flags") == "default" ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
  const int priority = c.word("priority") == "greatest" ? greatest : least;
  streams_.add(name, makeStream(name, ctx, flags, priority));
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
  const std::shared_ptr<Stream> s = streams_.take(name);
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
  const std::shared_ptr<Ctx> ctx = ctxs_.named(c.names[0]);
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
  events_.add(name, std::move(e));
}

void CudaDriverExecutor::eventRecord(const ModelCall& c) {
  const std::shared_ptr<Event> e = events_.named(c.names[0]);
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
  const std::shared_ptr<Event> e = events_.named(c.names[1]);
  if (e->orphan()) return;  // gone with its context; the handle may not be passed again
  const std::shared_ptr<Stream> s = target(c.names[0], CallPoint::Sync);
  // The event may be of another context (cuStreamWaitEvent allows it).
  ok(driver_.streamWaitEvent(s->handle, e->handle, 0), CallPoint::Sync,
     "cuStreamWaitEvent(" + c.names[0] + ", " + e->name + ")");
  s->waited.push_back(Stream::Waited{e, e->name, e->tickets, e->records});
}

void CudaDriverExecutor::eventQuery(const ModelCall& c) {
  const std::shared_ptr<Event> e = events_.named(c.names[0]);
  if (e->orphan()) return;
  const CUresult state = driver_.eventQuery(e->handle);
  if (state != CUDA_ERROR_NOT_READY) ok(state, CallPoint::Sync, "cuEventQuery(" + e->name + ")");
}

void CudaDriverExecutor::eventSync(const ModelCall& c) {
  // Only operations naming the event record it or end it, so the check after needs no state kept.
  const std::shared_ptr<Event> e = events_.named(c.names[0]);
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
  const std::shared_ptr<Event> e = events_.take(name);
  // Marked before the call: other streams' checks then stop querying it.
  e->destroyed = true;
  if (e->orphan()) return;
  // Destroying an event whose record is pending is defined: the call does not wait for it.
  ok(driver_.eventDestroy(e->handle), CallPoint::CtxDestroy, "cuEventDestroy(" + name + ")");
}

}  // namespace cudamodel

kit::TableShape cudaDriverExecutorTable() {
  return cudamodel::CudaDriverExecutor::table().shape();
}

std::unique_ptr<ModelExecutor> makeCudaDriverExecutor(std::string_view backend, int ordinal) {
  return std::make_unique<cudamodel::CudaDriverExecutor>(backend, ordinal);
}

}  // namespace gpufuzz
