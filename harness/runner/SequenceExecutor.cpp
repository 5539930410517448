// SequenceExecutor.cpp: one sequence, executed and checked against the reference model.
#include "harness/runner/SequenceExecutor.h"

#include <cstdio>
#include <map>
#include <memory>
#include <vector>

#include "model/ReferenceModel.h"
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

/// The live objects a sequence's names stand for, in creation order.
class World {
 public:
  World(Device& device, TeardownPolicy policy) : device_(device), policy_(policy) {}
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  /// Runs one operation; returns a mismatch description, or empty.
  std::string run(const Operation& op, const ReferenceModel& model) {
    const std::string& name = op.names.front();
    switch (op.kind) {
      case OpKind::Create:
        renderers_.emplace_back(
            name, std::make_unique<GpuRenderer>(device_, op.width, op.height, policy_));
        break;
      case OpKind::Draw:
        renderer(name).draw(op.triangles, op.seed);
        break;
      case OpKind::Sync:
        renderer(name).sync();
        break;
      case OpKind::SetTextures:
        renderer(name).setTextures(op.count, op.size, op.seed);
        break;
      case OpKind::ReadBack: {
        GpuRenderer& r = renderer(name);
        return compareImages(name, r.width(), r.readBack(), model.expectedImage(name));
      }
      case OpKind::Destroy:
        take(renderers_, find(renderers_, name))->release();
        break;
      case OpKind::CtxCreate:
        contexts_.emplace_back(name, device_.createContext());
        break;
      case OpKind::BufCreate:
        buffers_.emplace_back(op.names[1],
                              device_.allocBuffer(find(contexts_, name)->second, op.bytes));
        break;
      case OpKind::BufDestroy:
        device_.freeBuffer(take(buffers_, find(buffers_, name)));
        break;
      case OpKind::CtxDestroy:
        device_.destroyContext(take(contexts_, find(contexts_, name)));
        break;
    }
    return {};
  }

  /// Renderers in creation order (their destructors' work), then bare buffers, then bare
  /// contexts, each in creation order.
  void releaseLeftovers() {
    while (!renderers_.empty())
      take(renderers_, renderers_.begin())->release();
    while (!buffers_.empty())
      device_.freeBuffer(take(buffers_, buffers_.begin()));
    while (!contexts_.empty())
      device_.destroyContext(take(contexts_, contexts_.begin()));
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

  /// Removes an entry before its release call, so a release that fails is never retried.
  template <typename T>
  static T take(Named<T>& list, typename Named<T>::iterator it) {
    T value = std::move(it->second);
    list.erase(it);
    return value;
  }

  GpuRenderer& renderer(const std::string& name) { return *find(renderers_, name)->second; }

  Device& device_;
  TeardownPolicy policy_;
  Named<std::unique_ptr<GpuRenderer>> renderers_;
  Named<ContextId> contexts_;
  Named<BufferId> buffers_;
};

std::string leakText(const MemoryInUse& m) {
  return "after everything was released the device still holds " + std::to_string(m.bytes) +
         " bytes (" + std::to_string(m.buffers) + " buffers, " + std::to_string(m.contexts) +
         " contexts)";
}

}  // namespace

RunOutcome executeSequence(const Sequence& seq, Device& device, TeardownPolicy policy,
                           ProgressListener& progress) {
  ReferenceModel model;
  World world(device, policy);
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const At at{static_cast<uint32_t>(i + 1)};
    const std::string kind(opKindName(op.kind));
    progress.begin(at, kind);
    try {
      const std::string mismatch = world.run(op, model);
      if (!mismatch.empty()) return RunOutcome{OutcomeClass::Mismatch, at, kind, mismatch, {}};
    } catch (const InvalidUse& e) {
      return RunOutcome{OutcomeClass::Invalid, at, kind, e.what(), {}};
    } catch (const DeviceError& e) {
      return RunOutcome{OutcomeClass::Error, at, kind, e.what(), {}};
    }
    model.apply(op);
    progress.done(at);
  }
  progress.begin(At{}, kEndOperation);
  try {
    world.releaseLeftovers();
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
