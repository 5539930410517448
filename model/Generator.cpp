// Generator.cpp: weighted, precondition-respecting sequence generation for any model.
#include "model/Generator.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/ModelState.h"
#include "model/SplitMix.h"

namespace gpufuzz {

namespace {

constexpr std::size_t kMaxLiveRoots = 4;
constexpr std::size_t kMaxLiveOwned = 16;

/// SplitMix64: small, fast and good enough to pick among operations and names.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() { return splitmixNext(state_); }
  /// Uniform in [lo, hi].
  uint64_t inRange(uint64_t lo, uint64_t hi) {
    const uint64_t span = hi - lo;
    if (span == UINT64_MAX) return next();
    return lo + next() % (span + 1);
  }
  bool chance(uint64_t numerator, uint64_t denominator) {
    return inRange(0, denominator - 1) < numerator;
  }

 private:
  uint64_t state_;
};

/// A value in [lo, hi] whose bit length is uniform: large values occur, small ones dominate.
uint64_t logUniform(Random& random, uint64_t lo, uint64_t hi) {
  const auto loBits = static_cast<int>(std::bit_width(lo));
  const auto hiBits = static_cast<int>(std::bit_width(hi));
  const int bits = static_cast<int>(
      random.inRange(static_cast<uint64_t>(loBits), static_cast<uint64_t>(hiBits)));
  const uint64_t from = bits == 0 ? 0 : uint64_t{1} << (bits - 1);
  const uint64_t to = bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1;
  return random.inRange(std::max(lo, from), std::min(hi, to));
}

/// min(max, max(factor x default, min + floor)), without overflow: the top of a "usual" range.
uint64_t usualTop(const ArgDecl& a, uint64_t factor, uint64_t floor) {
  const uint64_t scaled =
      a.defaultValue > UINT64_MAX / factor ? UINT64_MAX : factor * a.defaultValue;
  const uint64_t above = a.min > UINT64_MAX - floor ? UINT64_MAX : a.min + floor;
  return std::min(a.max, std::max(scaled, above));
}

uint64_t argumentValue(Random& random, const ArgDecl& a) {
  if (a.isWord()) return random.chance(1, 2) ? a.defaultValue : random.inRange(0, a.max);
  // Bounds are what the API accepts; most runs want values near the default, so that a sequence
  // runs in microseconds on sim. The whole range still comes up, rarely.
  if (random.chance(1, 256)) return logUniform(random, a.min, a.max);
  const uint64_t ticket = random.inRange(0, 7);
  if (ticket < 4) return a.defaultValue;
  if (ticket < 7) return random.inRange(a.min, usualTop(a, 2, 16));
  return logUniform(random, a.min, usualTop(a, 16, 256));
}

class SequenceBuilder {
 public:
  SequenceBuilder(const LifecycleModel& model, Random& random)
      : model_(model), random_(random), state_(model), next_(model.resources.size(), 0) {}

  /// The next operation, applied; false when no operation can run.
  bool next(Operation& op) {
    const OpDecl* form = pick();
    if (!form) return false;
    op.form = form;
    op.names.clear();
    op.args.clear();
    fillNames(*form, op);
    for (const ArgDecl& a : form->args)
      op.args.push_back(argumentValue(random_, a));
    state_.applyValid(op);
    return true;
  }

 private:
  /// Whether `form` can run now, and so its share of the draw.
  bool runnable(const OpDecl& form) {
    std::fill(need_.begin(), need_.end(), 0);
    need_.resize(model_.resources.size(), 0);
    for (const SlotDecl& s : form.slots) {
      if (s.use == SlotUse::Use || s.use == SlotUse::End) ++need_[s.kind];
      if (s.use == SlotUse::Introduce) {
        const std::size_t cap = model_.resources[s.kind].owner ? kMaxLiveOwned : kMaxLiveRoots;
        if (state_.alive(s.kind).size() >= cap) return false;
      }
    }
    for (std::size_t k = 0; k < need_.size(); ++k) {
      if (state_.alive(k).size() < need_[k]) return false;
    }
    return true;
  }

  const OpDecl* pick() {
    uint64_t total = 0;
    weights_.assign(model_.ops.size(), 0);
    for (std::size_t i = 0; i < model_.ops.size(); ++i) {
      if (runnable(model_.ops[i])) weights_[i] = model_.ops[i].weight;
      total += weights_[i];
    }
    if (total == 0) return nullptr;
    uint64_t ticket = random_.inRange(0, total - 1);
    for (std::size_t i = 0; i < weights_.size(); ++i) {
      if (ticket < weights_[i]) return &model_.ops[i];
      ticket -= weights_[i];
    }
    return nullptr;
  }

  /// A live name of `kind` that the operation does not already use.
  void takeName(std::size_t kind, Operation& op) {
    const std::vector<std::size_t>& alive = state_.alive(kind);
    candidates_.clear();
    for (const std::size_t i : alive) {
      const std::string& n = state_.names()[i].name;
      if (std::find(op.names.begin(), op.names.end(), n) == op.names.end()) {
        candidates_.push_back(i);
      }
    }
    if (candidates_.empty()) return;
    op.names.push_back(
        state_.names()[candidates_[random_.inRange(0, candidates_.size() - 1)]].name);
  }

  void fillNames(const OpDecl& form, Operation& op) {
    for (const SlotDecl& s : form.slots) {
      switch (s.use) {
        case SlotUse::Use:
        case SlotUse::End:
          takeName(s.kind, op);
          break;
        case SlotUse::List: {
          const uint64_t listed = random_.inRange(0, kMaxListNames);
          for (uint64_t i = 0; i < listed; ++i)
            takeName(s.kind, op);
          break;
        }
        case SlotUse::Introduce:
          op.names.push_back(model_.resources[s.kind].prefix + std::to_string(next_[s.kind]++));
          break;
      }
    }
  }

  const LifecycleModel& model_;
  Random& random_;
  ModelState state_;
  std::vector<uint64_t> next_;
  std::vector<std::size_t> need_;
  std::vector<uint64_t> weights_;
  std::vector<std::size_t> candidates_;
};

/// The root owner of a name: itself when it has no owner.
std::string familyOf(const ModelState& state, const std::string& name) {
  const ModelState::Name* n = state.find(name);
  while (n != nullptr && n->owner)
    n = &state.names()[*n->owner];
  return n != nullptr ? n->name : name;
}

/// Spreads the operations over `threads` threads, as Generator.h says.
void spreadOverThreads(Sequence& seq, unsigned threads, Random& random) {
  ModelState state(seq.lifecycle());
  std::map<std::string, unsigned, std::less<>> lastOnName;
  // Per family: the thread of its latest operation, and that operation's names.
  std::map<std::string, std::pair<unsigned, std::vector<std::string>>, std::less<>> lastInFamily;
  for (Operation& op : seq.ops) {
    state.applyValid(op);
    std::optional<unsigned> own;
    for (const std::string& n : op.names) {
      if (const auto it = lastOnName.find(n); it != lastOnName.end()) own = it->second;
    }
    const std::string family = op.names.empty() ? "" : familyOf(state, op.names.front());
    std::optional<unsigned> sibling;
    if (const auto it = lastInFamily.find(family); it != lastInFamily.end()) {
      const auto& names = it->second.second;
      const bool shares = std::any_of(op.names.begin(), op.names.end(), [&](const std::string& n) {
        return std::find(names.begin(), names.end(), n) != names.end();
      });
      if (!shares) sibling = it->second.first;
    }
    const uint64_t ticket = random.inRange(0, 7);
    unsigned thread = static_cast<unsigned>(random.inRange(0, threads - 1));
    if (sibling && ticket < 3) {
      thread = static_cast<unsigned>(random.inRange(0, threads - 2));
      if (thread >= *sibling) ++thread;
    } else if (own && ticket < 6) {
      thread = *own;
    }
    op.thread = thread;
    for (const std::string& n : op.names)
      lastOnName[n] = thread;
    lastInFamily[family] = {thread, op.names};
  }
}

/// Marks on `seq` for --inject: on injectRate percent of the sequences, one to three of the
/// operations whose model declares an injected word, each with such a word; N is 1 for most,
/// else 2 to 4 (docs/failures.md).
void addMarks(Sequence& seq, const GeneratorConfig& config, Random& random) {
  if (!random.chance(config.injectRate, 100)) return;
  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    for (const FailWord w : kFailWords) {
      if (config.inject.has(w) && seq.ops[i].form->fails.has(w)) {
        eligible.push_back(i);
        break;
      }
    }
  }
  if (eligible.empty()) return;
  const uint64_t count = std::min<uint64_t>(random.inRange(1, 3), eligible.size());
  for (uint64_t k = 0; k < count; ++k) {
    const std::size_t pick = random.inRange(0, eligible.size() - 1);
    Operation& op = seq.ops[eligible[pick]];
    eligible.erase(eligible.begin() + static_cast<std::ptrdiff_t>(pick));
    std::vector<FailWord> words;
    for (const FailWord w : kFailWords) {
      if (config.inject.has(w) && op.form->fails.has(w)) words.push_back(w);
    }
    const FailWord word = words[random.inRange(0, words.size() - 1)];
    const uint32_t nth = random.chance(3, 4) ? 1U : static_cast<uint32_t>(random.inRange(2, 4));
    op.mark = Mark{word, nth};
  }
}

Sequence generateWith(const GeneratorConfig& config, Random& random) {
  const uint32_t maxOps = std::max<uint32_t>(config.maxOps, 1);
  const uint32_t length = random.chance(1, 2)
                              ? static_cast<uint32_t>(random.inRange(
                                    std::min<uint32_t>(3, maxOps), std::min<uint32_t>(12, maxOps)))
                              : static_cast<uint32_t>(random.inRange(1, maxOps));
  const LifecycleModel& model = config.lifecycle();
  SequenceBuilder builder(model, random);
  Sequence seq;
  seq.model = &model;
  seq.ops.reserve(length);
  for (uint32_t i = 0; i < length; ++i) {
    Operation op;
    if (!builder.next(op)) break;
    seq.ops.push_back(std::move(op));
  }
  if (config.threads > 1) {
    // A generator of its own: the operations are those of one thread for the same seed.
    Random threads(random.next() ^ 0x7468726561647321ULL);
    spreadOverThreads(seq, std::min(config.threads, kMaxThreads), threads);
  }
  if (!config.inject.empty()) {
    // A generator of its own too: without --inject the same seed gives the same sequence.
    Random marks(random.next() ^ 0x696e6a6563742121ULL);
    addMarks(seq, config, marks);
  }
  return seq;
}

}  // namespace

const LifecycleModel& GeneratorConfig::lifecycle() const {
  static const LifecycleModel& renderer = builtinModel("renderer");
  return model ? *model : renderer;
}

rc::Gen<Sequence> genSequence(const GeneratorConfig& config) {
  return rc::gen::map(rc::gen::resize(rc::kNominalSize, rc::gen::arbitrary<uint64_t>()),
                      [config](uint64_t seed) {
                        Random random(seed);
                        return generateWith(config, random);
                      });
}

Sequence generateSequence(const GeneratorConfig& config, uint64_t seed) {
  Random random(seed);
  return generateWith(config, random);
}

}  // namespace gpufuzz
