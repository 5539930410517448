// Generator.cpp: weighted, precondition-respecting sequence generation.
#include "model/Generator.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "model/ReferenceModel.h"

namespace gpufuzz {

namespace {

constexpr uint32_t kMaxLiveRenderers = 4;
constexpr uint32_t kMaxLiveContexts = 4;

/// One of `choices`, with probability proportional to its weight (weights may be zero).
template <typename T>
T pickWeighted(const std::vector<std::pair<uint32_t, T>>& choices) {
  uint32_t total = 0;
  for (const auto& c : choices)
    total += c.first;
  uint32_t ticket = *rc::gen::inRange<uint32_t>(0, total);
  for (const auto& c : choices) {
    if (ticket < c.first) return c.second;
    ticket -= c.first;
  }
  return choices.back().second;
}

uint32_t pickU32(uint32_t lo, uint32_t hi) {  // inclusive
  return static_cast<uint32_t>(*rc::gen::inRange<uint64_t>(lo, uint64_t{hi} + 1));
}

/// Mostly small, sometimes anywhere in [lo, hi].
uint32_t smallish(uint32_t lo, uint32_t smallHi, uint32_t hi) {
  return pickWeighted<bool>({{9, true}, {1, false}}) ? pickU32(lo, smallHi) : pickU32(lo, hi);
}

std::string pickName(const std::vector<std::string>& names) {
  return names[pickU32(0, static_cast<uint32_t>(names.size() - 1))];
}

template <typename Map>
std::vector<std::string> keysOf(const Map& m) {
  std::vector<std::string> out;
  for (const auto& entry : m) {
    if constexpr (requires { entry.first; }) {
      out.push_back(entry.first);
    } else {
      out.push_back(entry);
    }
  }
  return out;
}

class SequenceBuilder {
 public:
  explicit SequenceBuilder(Vocabulary vocabulary) : vocabulary_(vocabulary) {}

  Operation next() {
    const bool device =
        vocabulary_ == Vocabulary::Device ||
        (vocabulary_ == Vocabulary::All && pickWeighted<bool>({{1, true}, {2, false}}));
    Operation op = device ? deviceOp() : rendererOp();
    model_.apply(op);
    return op;
  }

 private:
  Operation rendererOp() {
    const auto alive = keysOf(model_.renderers());
    if (alive.empty()) return create();
    const uint32_t canCreate = alive.size() < kMaxLiveRenderers ? 15 : 0;
    const OpKind kind = pickWeighted<OpKind>({{30, OpKind::Draw},
                                              {16, OpKind::Destroy},
                                              {canCreate, OpKind::Create},
                                              {10, OpKind::SetTextures},
                                              {7, OpKind::Sync},
                                              {7, OpKind::ReadBack}});
    if (kind == OpKind::Create) return create();
    Operation op;
    op.kind = kind;
    op.names = {pickName(alive)};
    if (kind == OpKind::Draw) {
      op.triangles = smallish(1, 16, 1024);
      op.seed = pickU32(0, UINT32_MAX);
    } else if (kind == OpKind::SetTextures) {
      op.count = smallish(0, 4, 16);
      op.size = smallish(1, 32, 256);
      op.seed = pickU32(0, UINT32_MAX);
    }
    return op;
  }

  Operation create() {
    Operation op;
    op.kind = OpKind::Create;
    op.names = {"r" + std::to_string(renderers_++)};
    if (pickWeighted<bool>({{3, false}, {1, true}})) {
      op.width = smallish(1, 96, 512);
      op.height = smallish(1, 96, 512);
    }
    return op;
  }

  Operation deviceOp() {
    const auto contexts = keysOf(model_.contexts());
    const auto buffers = keysOf(model_.buffers());
    const uint32_t canCreate = contexts.size() < kMaxLiveContexts ? 12 : 0;
    const OpKind kind =
        pickWeighted<OpKind>({{contexts.empty() ? 1U : canCreate, OpKind::CtxCreate},
                              {contexts.empty() ? 0U : 20, OpKind::BufCreate},
                              {buffers.empty() ? 0U : 12, OpKind::BufDestroy},
                              {contexts.empty() ? 0U : 10, OpKind::CtxDestroy}});
    Operation op;
    op.kind = kind;
    switch (kind) {
      case OpKind::CtxCreate:
        op.names = {"c" + std::to_string(contexts_++)};
        break;
      case OpKind::BufCreate:
        op.names = {pickName(contexts), "b" + std::to_string(buffers_++)};
        op.bytes = pickWeighted<bool>({{4, true}, {1, false}}) ? 256 : pickU32(1, 1U << 20);
        break;
      case OpKind::BufDestroy:
        op.names = {pickName(buffers)};
        break;
      default:
        op.names = {pickName(contexts)};
        break;
    }
    return op;
  }

  Vocabulary vocabulary_;
  ReferenceModel model_;
  uint32_t renderers_ = 0, contexts_ = 0, buffers_ = 0;
};

}  // namespace

rc::Gen<Sequence> genSequence(const GeneratorConfig& config) {
  return rc::gen::exec([config] {
    const uint32_t maxOps = std::max<uint32_t>(config.maxOps, 1);
    const uint32_t length =
        pickWeighted<bool>({{1, true}, {1, false}})
            ? pickU32(std::min<uint32_t>(3, maxOps), std::min<uint32_t>(12, maxOps))
            : pickU32(1, maxOps);
    SequenceBuilder builder(config.vocabulary);
    Sequence seq;
    for (uint32_t i = 0; i < length; ++i)
      seq.ops.push_back(builder.next());
    return seq;
  });
}

Sequence generateSequence(const GeneratorConfig& config, uint64_t seed) {
  // RapidCheck keeps the state of `gen::exec` in process-wide implicit parameters, so concurrent
  // generation would corrupt it: one generation at a time (it takes microseconds).
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return genSequence(config)(rc::Random(seed), rc::kNominalSize).value();
}

}  // namespace gpufuzz
