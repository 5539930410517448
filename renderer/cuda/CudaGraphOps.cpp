// CudaGraphOps.cpp: the cuda-driver executor's handlers of graphs: capture, instantiation,
// launches and their ends, each launch's bytes checked when its executable graph ends.
#include "renderer/cuda/CudaDriverExecutorImpl.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz::cudamodel {

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
  graphs_.add(name, std::move(g));
}

void CudaDriverExecutor::graphInstantiate(const ModelCall& c) {
  const std::shared_ptr<Graph> g = graphs_.named(c.names[0]);
  const std::string& name = c.names[1];
  auto x = std::make_shared<GraphExec>();
  x->name = name;
  x->graph = g;
  execs_.add(name, x);
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
  const std::shared_ptr<GraphExec> exec = execs_.named(c.names[0]);
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
  const std::shared_ptr<GraphExec> x = execs_.take(name);
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
  const std::shared_ptr<Graph> g = graphs_.take(name);
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

}  // namespace gpufuzz::cudamodel
