// SequenceExecutor.cpp: one sequence, executed and checked against the reference model.
#include "harness/runner/SequenceExecutor.h"

#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "harness/runner/ThreadLanes.h"

#include "model/renderer/ReferenceModel.h"
#include "renderer/GpuRenderer.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

namespace {

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

/// The first differing pixel and how many differ, or empty when the images agree.
std::string compareImages(const std::string& name, uint32_t width, const std::vector<uint32_t>& got,
                          const std::vector<uint32_t>& want) {
  std::size_t first = got.size();
  std::size_t differing = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (differing++ == 0) first = i;
  }
  if (differing == 0) return {};
  return "read_back " + name + ": pixel (" + std::to_string(first % width) + ", " +
         std::to_string(first / width) + ") is " + hex(got[first]) + ", the model expects " +
         hex(want[first]) + " (" + std::to_string(differing) + " of " + std::to_string(got.size()) +
         " pixels differ)";
}

/// The live objects a sequence's names stand for, in creation order. Operations of a threaded
/// sequence run on several threads, never two on one name: the lists are locked, the objects
/// are not.
class World {
 public:
  World(Device& device, TeardownPolicy policy) : device_(device), policy_(policy) {}
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /// The image a read_back must return now.
  using Expected = std::function<std::vector<uint32_t>(const std::string& renderer)>;

  /// Runs one operation; returns a mismatch description, or empty.
  std::string run(const Operation& op, const Expected& expected) {
    const std::string& name = op.names.front();
    const auto u32 = [&](std::string_view key) { return static_cast<uint32_t>(op.arg(key)); };
    switch (rendererOp(op)) {
      case RendererOp::Create:
        add(renderers_, name,
            std::make_unique<GpuRenderer>(device_, u32("width"), u32("height"), policy_));
        break;
      case RendererOp::Draw:
        renderer(name).draw(u32("triangles"), u32("seed"));
        break;
      case RendererOp::Sync:
        renderer(name).sync();
        break;
      case RendererOp::SetTextures:
        renderer(name).setTextures(u32("count"), u32("size"), u32("seed"));
        break;
      case RendererOp::ReadBack: {
        GpuRenderer& r = renderer(name);
        return compareImages(name, r.width(), r.readBack(), expected(name));
      }
      case RendererOp::Destroy:
        take(renderers_, name)->release();
        break;
      case RendererOp::CtxCreate:
        add(contexts_, name, device_.createContext());
        break;
      case RendererOp::BufCreate:
        add(buffers_, op.names[1], device_.allocBuffer(get(contexts_, name), op.arg("bytes")));
        break;
      case RendererOp::BufDestroy:
        device_.freeBuffer(take(buffers_, name));
        break;
      case RendererOp::CtxDestroy:
        device_.destroyContext(take(contexts_, name));
        break;
      case RendererOp::Other:
        throw std::logic_error("the runner does not implement " + operationText(op));
    }
    return {};
  }

  /// Leftovers kind by kind in the model's release order, each in creation order: renderers
  /// through their destructors, bare buffers freed, bare contexts destroyed.
  void releaseLeftovers(const LifecycleModel& model) {
    for (const std::size_t kind : model.release) {
      const std::string_view k = model.resources[kind].kind;
      if (k == "renderer") {
        while (!renderers_.empty())
          take(renderers_, renderers_.front().first)->release();
      } else if (k == "buffer") {
        while (!buffers_.empty())
          device_.freeBuffer(take(buffers_, buffers_.front().first));
      } else if (k == "context") {
        while (!contexts_.empty())
          device_.destroyContext(take(contexts_, contexts_.front().first));
      }
    }
  }

  /// After a failure nothing more touches the device.
  void abandon() {
    for (auto& [name, r] : renderers_)
      r->abandon();
  }

  ~World() { abandon(); }

 private:
  template <typename T>
  using Named = std::vector<std::pair<std::string, T>>;

  template <typename T>
  static typename Named<T>::iterator find(Named<T>& list, const std::string& name) {
    for (auto it = list.begin(); it != list.end(); ++it) {
      if (it->first == name) return it;
    }
    throw std::logic_error("validated sequence names a dead object: " + name);
  }

  template <typename T>
  void add(Named<T>& list, const std::string& name, T value) {
    const std::lock_guard lock(mutex_);
    list.emplace_back(name, std::move(value));
  }
  ContextId get(Named<ContextId>& list, const std::string& name) {
    const std::lock_guard lock(mutex_);
    return find(list, name)->second;
  }
  /// Removes an entry before its release call, so a release that fails is never retried.
  template <typename T>
  T take(Named<T>& list, const std::string& name) {
    const std::lock_guard lock(mutex_);
    const auto it = find(list, name);
    T value = std::move(it->second);
    list.erase(it);
    return value;
  }

  GpuRenderer& renderer(const std::string& name) {
    const std::lock_guard lock(mutex_);
    return *find(renderers_, name)->second;
  }

  Device& device_;
  TeardownPolicy policy_;
  std::mutex mutex_;
  Named<std::unique_ptr<GpuRenderer>> renderers_;
  Named<ContextId> contexts_;
  Named<BufferId> buffers_;
};

std::string leakText(const MemoryInUse& m) {
  return "after everything was released the device still holds " + std::to_string(m.bytes) +
         " bytes (" + std::to_string(m.buffers) + " buffers, " + std::to_string(m.contexts) +
         " contexts)";
}

/// The mark's call failure armed on this thread for one operation, disarmed however it ends.
class ArmedMark {
 public:
  ArmedMark(Device& device, const Operation& op) : device_(device) {
    if (op.mark) device_.arm(callFailureOf(*op.mark));
  }
  ~ArmedMark() { device_.disarm(); }
  ArmedMark(const ArmedMark&) = delete;
  ArmedMark& operator=(const ArmedMark&) = delete;

 private:
  Device& device_;
};

/// One operation, begun and, when it passes, done; when its marked call failed and the failure
/// came out as the operation's, failed. Anything else is the run's failure.
StepEnd runStep(World& world, Device& device, const Operation& op, At at,
                const World::Expected& expected, ProgressListener& progress) {
  const std::string kind(op.name());
  progress.begin(at, kind);
  try {
    const ArmedMark armed(device, op);
    const std::string mismatch = world.run(op, expected);
    if (!mismatch.empty()) return {RunOutcome{OutcomeClass::Mismatch, at, kind, mismatch, {}}};
  } catch (const InjectedFailure& e) {
    progress.failed(at, e.what());
    return {std::nullopt, true};
  } catch (const InvalidUse& e) {
    return {RunOutcome{OutcomeClass::Invalid, at, kind, e.what(), {}}};
  } catch (const DeviceError& e) {
    if (ranOutForReal(e.what(), op.form->fails.has(FailWord::Oom))) {
      progress.failed(at, realFailureDetail(e.what()));
      return {std::nullopt, true};
    }
    return {RunOutcome{OutcomeClass::Error, at, kind, e.what(), {}}};
  }
  progress.done(at);
  return {};
}

/// The reference model and the names never made, as operations end. A failed operation changes
/// nothing a later read-back shows (the renderer model's strong guarantee, docs/failures.md), but
/// the names it ends are ended.
class Expectations {
 public:
  explicit Expectations(const Sequence& seq) : model_(seq.lifecycle()) {}

  /// Whether operation `op` is skipped: it uses a name never made.
  bool skips(const Operation& op) {
    const std::lock_guard lock(mutex_);
    return unmade_.skips(op);
  }
  /// The image a read_back of `renderer` must return now.
  std::vector<uint32_t> image(const std::string& renderer) {
    const std::lock_guard lock(mutex_);
    return model_.expectedImage(renderer);
  }
  /// `op` ended: done, or failed as its mark asked.
  void ended(std::size_t /*i*/, const Operation& op, bool failed) {
    const std::lock_guard lock(mutex_);
    if (failed) unmade_.failed(op);
    if (!failed || endsAName(op)) model_.apply(op);
  }

 private:
  // Operations on threads end in another order than the file's, but those on one renderer keep
  // theirs, and a renderer's image depends on its own operations alone.
  std::mutex mutex_;
  ReferenceModel model_;
  UnmadeNames unmade_;
};

/// Operation `i` of `seq` on the device, skipped or run: its failure, or nothing.
std::optional<RunOutcome> runOrSkipOnDevice(const Sequence& seq, std::size_t i, World& world,
                                            Device& device, Expectations& expectations,
                                            ProgressListener& progress) {
  return runOrSkip(seq, i, expectations, progress, [&](const Operation& op, At at) {
    const World::Expected expected = [&](const std::string& name) {
      return expectations.image(name);
    };
    return runStep(world, device, op, at, expected, progress);
  });
}

/// The operations on their threads: the failure of the lowest ordinal, or nothing.
std::optional<RunOutcome> runThreads(const Sequence& seq, World& world, Device& device,
                                     ProgressListener& progress,
                                     std::optional<ScheduleChoice> schedule) {
  Expectations expectations(seq);
  ThreadLanes lanes(seq, schedule);
  progress.start();
  std::mutex mutex;
  std::map<std::size_t, RunOutcome> failures;
  // The runner's own failure on a thread (a bug, not the device's) ends the run as on one
  // thread: thrown from here, once every thread has finished.
  std::exception_ptr internal;
  lanes.run([&](std::size_t i) {
    try {
      std::optional<RunOutcome> failed =
          runOrSkipOnDevice(seq, i, world, device, expectations, progress);
      if (!failed) return true;
      const std::lock_guard lock(mutex);
      failures.emplace(i, std::move(*failed));
    } catch (...) {
      const std::lock_guard lock(mutex);
      if (!internal) internal = std::current_exception();
    }
    return false;
  });
  if (internal) std::rethrow_exception(internal);
  if (failures.empty()) return std::nullopt;
  return failures.begin()->second;
}

}  // namespace

CallFailure callFailureOf(const Mark& mark) {
  switch (mark.word) {
    case FailWord::Oom:
      return {FailureKind::DeviceMemory, mark.nth};
    case FailWord::HostOom:
      return {FailureKind::HostMemory, mark.nth};
    case FailWord::Lost:
      return {FailureKind::DeviceLost, mark.nth};
  }
  return {FailureKind::DeviceMemory, mark.nth};
}

RunOutcome executeSequence(const Sequence& seq, Device& device, TeardownPolicy policy,
                           ProgressListener& progress, std::optional<ScheduleChoice> schedule) {
  World world(device, policy);
  if (seq.threadCount() > 1) {
    if (std::optional<RunOutcome> failed = runThreads(seq, world, device, progress, schedule))
      return *failed;
  } else {
    progress.start();
    Expectations expectations(seq);
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      if (std::optional<RunOutcome> failed =
              runOrSkipOnDevice(seq, i, world, device, expectations, progress))
        return *failed;
    }
  }
  progress.begin(At{}, kEndOperation);
  try {
    world.releaseLeftovers(seq.lifecycle());
  } catch (const InvalidUse& e) {
    return RunOutcome{OutcomeClass::Invalid, At{}, std::string(kEndOperation), e.what(), {}};
  } catch (const DeviceError& e) {
    return RunOutcome{OutcomeClass::Error, At{}, std::string(kEndOperation), e.what(), {}};
  }
  progress.done(At{});
  const MemoryInUse held = device.memoryInUse();
  if (held != MemoryInUse{})
    return RunOutcome{OutcomeClass::Leak, std::nullopt, "", leakText(held), {}};
  return RunOutcome{};
}

}  // namespace gpufuzz
