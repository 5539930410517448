// Explainer.cpp: single-edit experiments on a minimal failing sequence, and their report.
#include "harness/search/Explainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>

#include "harness/base/Json.h"
#include "harness/search/Finding.h"
#include "model/ModelFacts.h"
#include "model/SequenceEdits.h"
#include "model/renderer/ReferenceModel.h"

namespace gpufuzz {

namespace {

std::string ordinalWord(uint32_t index) {
  static constexpr const char* kWords[] = {"first", "second",  "third",  "fourth", "fifth",
                                           "sixth", "seventh", "eighth", "ninth",  "tenth"};
  if (index < std::size(kWords)) return kWords[index];
  const uint32_t n = index + 1;
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

std::string contextText(uint32_t index) {
  return "context #" + std::to_string(index) + " (the " + ordinalWord(index) + " context)";
}

/// "2 `draw r0`": an operation as the report cites it (1-based, as `at` is).
std::string stepText(const Sequence& seq, std::size_t index) {
  return std::to_string(index + 1) + " `" + operationText(seq.ops[index]) + "`";
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator = ", ") {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : separator) + parts[i];
  return out;
}

std::string plural(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// "the draw at 2 and the set_textures at 4": the work queued since a renderer's last wait.
std::string queuedText(const Sequence& seq, const std::vector<std::size_t>& queued) {
  std::vector<std::string> parts;
  for (std::size_t i : queued) {
    parts.push_back("the " + std::string(seq.ops[i].name()) + " at " + std::to_string(i + 1));
  }
  return joined(parts, " and ");
}

/// The facts of a sequence of a model without the renderer's semantics, in its model's terms.
std::vector<StepFacts> modelStepFacts(const Sequence& seq) {
  std::vector<StepFacts> out;
  for (ModelStep& step : modelFacts(seq))
    out.push_back({StepRole::Other, std::move(step.text), std::nullopt, std::move(step.role)});
  return out;
}

/// A renderer's wait: `sync` or `read_back`.
bool isWait(const Operation& op) {
  if (!hasRendererSemantics(*op.form->model)) return false;
  const RendererOp kind = rendererOp(op);
  return kind == RendererOp::Sync || kind == RendererOp::ReadBack;
}

/// A model role as a heading: "ends-pool-owning-buf" -> "Ends pool owning buf".
std::string roleWords(const std::string& role) {
  std::string out = role;
  for (char& c : out)
    c = c == '-' || c == '+' ? ' ' : c;
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

EditVerdict verdictOf(const TrialResult& t, const FailureKey& key) {
  if (t.harnessError) return EditVerdict::Inconclusive;
  if (key.matches(t.outcome)) return EditVerdict::Keeps;
  return t.outcome.failed() ? EditVerdict::Changes : EditVerdict::Prevents;
}

/// Runs each distinct experiment once (sequences that differ only in names are one experiment:
/// names only identify), all queued experiments of a phase at once so that `jobs` stay busy.
class Laboratory {
 public:
  /// `tries`: how many schedules a threaded experiment gets until one fails as `key`.
  Laboratory(TrialRunner& trials, unsigned jobs, FailureKey key, std::optional<Millis> limit,
             uint32_t tries)
      : trials_(trials),
        jobs_(jobs == 0 ? 1 : jobs),
        key_(std::move(key)),
        limit_(key_.candidateLimit(limit)),
        tries_(std::max<uint32_t>(tries, 1)) {}

  void add(const Sequence& seq) {
    const std::string text = normalizedOperations(seq);
    if (done_.count(text) > 0 || !queuedTexts_.insert(text).second) return;
    queue_.push_back(seq);
  }
  std::size_t queued() const { return queue_.size(); }

  void run() {
    // A slow failure is only told from noise by a confirmation run.
    const TrialMode mode = key_.cls == OutcomeClass::Slow ? TrialMode::Confirmed : TrialMode::Quick;
    const auto results = runConcurrently<TrialResult>(queue_.size(), jobs_, [&](std::size_t i) {
      return trials_.runTries(
          queue_[i], mode, limit_, trials_.triesFor(queue_[i], tries_),
          [&](const TrialResult& t) { return key_.matches(t.outcome); },
          queue_[i].directives.attempt.value_or(0));
    });
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      executions_ += results[i].executions;
      const EditVerdict verdict = verdictOf(results[i], key_);
      if (verdict == EditVerdict::Inconclusive) ++inconclusive_;
      done_[normalizedOperations(queue_[i])] = {results[i].outcome, verdict};
    }
    experiments_ += queue_.size();
    queue_.clear();
    queuedTexts_.clear();
  }

  /// The experiment on `seq`, which must have been run.
  Experiment get(const Sequence& seq) const {
    const auto& [outcome, verdict] = done_.at(normalizedOperations(seq));
    return Experiment{seq, outcome, verdict};
  }

  void addExecutions(uint64_t n) { executions_ += n; }
  uint64_t executions() const { return executions_; }
  uint32_t inconclusive() const { return inconclusive_; }
  std::size_t experiments() const { return experiments_; }

 private:
  TrialRunner& trials_;
  unsigned jobs_;
  FailureKey key_;
  std::optional<Millis> limit_;  // an experiment stuck this long is stopped (none: deadlines)
  uint32_t tries_;
  std::vector<Sequence> queue_;
  std::set<std::string> queuedTexts_;
  std::map<std::string, std::pair<RunOutcome, EditVerdict>> done_;
  uint64_t executions_ = 0;
  uint32_t inconclusive_ = 0;
  std::size_t experiments_ = 0;
};

/// The names of `seq`, alive or not, so that copies get names never used.
std::set<std::string> usedNames(const Sequence& seq) {
  std::set<std::string> names;
  for (const Operation& op : seq.ops)
    names.insert(op.names.begin(), op.names.end());
  return names;
}

/// `op` with every name it introduces replaced by a fresh one (r3, c1, b2...).
Operation freshCopy(const Operation& op, std::set<std::string>& used) {
  Operation copy = op;
  const LifecycleModel& model = *op.form->model;
  for (std::size_t i = 0; i < copy.names.size(); ++i) {
    if (op.useOfName(i) != SlotUse::Introduce) continue;
    const std::string& prefix = model.resources[op.kindOfName(i)].prefix;
    for (unsigned n = 0;; ++n) {
      std::string name = prefix + std::to_string(n);
      if (used.insert(name).second) {
        copy.names[i] = std::move(name);
        break;
      }
    }
  }
  return copy;
}

/// The single steps worth inserting where the model stands. For the renderer: the waits, uploads
/// and releases of what is alive there. For another model: every operation on one live name
/// alone (a slot, no list, nothing introduced), with default arguments.
std::vector<Operation> insertableSteps(const ModelState& state) {
  const LifecycleModel& model = state.model();
  std::vector<Operation> out;
  const auto step = [&](const OpDecl* form, const std::string& name) {
    if (!form) return;
    Operation op;
    op.form = form;
    op.names = {name};
    for (const ArgDecl& a : form->args)
      op.args.push_back(a.defaultValue);
    out.push_back(std::move(op));
  };
  const auto alive = [&](std::string_view kind) {
    std::vector<std::string> names;
    if (const auto k = model.kind(kind)) {
      for (const std::size_t i : state.alive(*k))
        names.push_back(state.names()[i].name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  if (hasRendererSemantics(model)) {
    for (const std::string& r : alive("renderer")) {
      for (const char* op : {"sync", "read_back", "set_textures", "destroy"})
        step(model.op(op), r);
    }
    for (const std::string& b : alive("buffer"))
      step(model.op("buf_destroy"), b);
    for (const std::string& c : alive("context"))
      step(model.op("ctx_destroy"), c);
    return out;
  }
  for (std::size_t k = 0; k < model.resources.size(); ++k) {
    for (const std::size_t i : state.alive(k)) {
      for (const OpDecl& form : model.ops) {
        if (form.slots.size() == 1 && form.slots[0].kind == k &&
            (form.slots[0].use == SlotUse::Use || form.slots[0].use == SlotUse::End)) {
          step(&form, state.names()[i].name);
        }
      }
    }
  }
  return out;
}

/// The operation `outcome` happened at, as an index into `seq`, when it names one.
std::optional<std::size_t> failingOperation(const Sequence& seq, const RunOutcome& outcome) {
  if (!outcome.at || outcome.at->isEnd() || outcome.at->ordinal > seq.ops.size()) {
    return std::nullopt;
  }
  return outcome.at->ordinal - 1;
}

void writeOutcome(JsonWriter& j, const RunOutcome& o) {
  j.beginObject();
  j.key("class").value(outcomeClassName(o.cls));
  j.key("at");
  writeAt(j, o.at);
  j.key("op").value(o.op);
  j.key("detail").value(o.detail);
  j.endObject();
}

/// "hang at 5 (create)": an outcome without its detail, for lists of experiments.
std::string briefOutcome(const RunOutcome& o) {
  return std::string(outcomeClassName(o.cls)) +
         (o.at ? " at " + atText(*o.at) + " (" + o.op + ")" : "");
}

/// "passes", "still fails: hang at 5 (create)", "fails otherwise: error at 3 (...): ...".
std::string verdictText(const Experiment& x) {
  switch (x.verdict) {
    case EditVerdict::Keeps:
      return "still fails: " + briefOutcome(x.outcome);
    case EditVerdict::Prevents:
      return "passes";
    case EditVerdict::Changes:
      return "fails otherwise: " + outcomeText(x.outcome);
    case EditVerdict::Inconclusive:
      return "inconclusive (the harness could not run it)";
  }
  return {};
}

std::string_view roleHeading(StepRole role) {
  switch (role) {
    case StepRole::IntroducesContext:
      return "introduce a context";
    case StepRole::Allocates:
      return "allocate a buffer";
    case StepRole::QueuesWork:
      return "queue work (a draw or a texture upload)";
    case StepRole::Waits:
      return "wait for a queue";
    case StepRole::ReplacesTextures:
      return "replace textures";
    case StepRole::DestroysWithPending:
      return "destroy a context while work queued on it is pending";
    case StepRole::DestroysWithLiveBuffers:
      return "destroy a context while its buffers live";
    case StepRole::Destroys:
      return "destroy a renderer or a context";
    case StepRole::FreesBuffer:
      return "free a buffer";
    case StepRole::Other:
      return "other steps";
  }
  return {};
}

}  // namespace

std::string roleKey(const StepFacts& f) {
  return f.modelRole.empty() ? std::string(stepRoleName(f.role)) : f.modelRole;
}

std::string_view stepRoleName(StepRole role) {
  switch (role) {
    case StepRole::IntroducesContext:
      return "introduces-context";
    case StepRole::Allocates:
      return "allocates";
    case StepRole::QueuesWork:
      return "queues-work";
    case StepRole::Waits:
      return "waits";
    case StepRole::ReplacesTextures:
      return "replaces-textures";
    case StepRole::DestroysWithPending:
      return "destroys-with-pending";
    case StepRole::DestroysWithLiveBuffers:
      return "destroys-with-live-buffers";
    case StepRole::Destroys:
      return "destroys";
    case StepRole::FreesBuffer:
      return "frees-buffer";
    case StepRole::Other:
      return "other";
  }
  return {};
}

std::string_view verdictName(EditVerdict v) {
  switch (v) {
    case EditVerdict::Keeps:
      return "keeps";
    case EditVerdict::Prevents:
      return "prevents";
    case EditVerdict::Changes:
      return "changes";
    case EditVerdict::Inconclusive:
      return "inconclusive";
  }
  return {};
}

namespace {

/// A renderer as lifecycleFacts follows it.
struct RendererLife {
  uint32_t context = 0;
  std::vector<std::size_t> queued;  // operations enqueued since the last wait
  uint32_t textures = 0;
};

/// A bare context as lifecycleFacts follows it.
struct ContextLife {
  uint32_t context = 0;
  uint32_t liveBuffers = 0, allocations = 0;
  bool alive = true;
};

/// What step `i` of `seq`, a set_textures of `count` textures on renderer `r`, establishes.
StepFacts setTexturesFacts(const Sequence& seq, std::size_t i, uint32_t count, RendererLife& r,
                           const Defenses& defenses, const std::string& policyText) {
  const std::string& name = seq.ops[i].names.at(0);
  StepFacts f;
  f.context = r.context;
  std::vector<std::string> parts;
  if (r.textures > 0) {
    f.role = StepRole::ReplacesTextures;
    std::string text = "replaces " + name + "'s " + plural(r.textures, "texture");
    if (!r.queued.empty()) {
      text += defenses.textureReplaceWaits
                  ? ", after waiting for " + queuedText(seq, r.queued)
                  : " while " + queuedText(seq, r.queued) + " still reads them (" + policyText +
                        " does not wait)";
    }
    parts.push_back(text);
  } else if (!r.queued.empty() && defenses.textureReplaceWaits) {
    f.role = count > 0 ? StepRole::QueuesWork : StepRole::Waits;
    parts.push_back("waits for " + queuedText(seq, r.queued));
  } else {
    f.role = count > 0 ? StepRole::QueuesWork : StepRole::Other;
  }
  if (count > 0) {
    parts.push_back("queues the upload of " + plural(count, "texture") + " on " + name +
                    " (context #" + std::to_string(r.context) + ")");
  } else if (parts.empty()) {
    parts.push_back("sets no textures on " + name);
  }
  f.establishes = joined(parts, ", then ");
  if (defenses.textureReplaceWaits) r.queued.clear();
  if (count > 0) r.queued.push_back(i);
  r.textures = count;
  return f;
}

/// What a destroy of renderer `name`, `r`, establishes under `defenses`.
StepFacts destroyFacts(const Sequence& seq, const std::string& name, const RendererLife& r,
                       const Defenses& defenses, const std::string& policyText) {
  StepFacts f;
  const std::string ctx = "context #" + std::to_string(r.context);
  const bool pendingAtRelease = !r.queued.empty() && !defenses.destroyWaits;
  f.context = r.context;
  if (pendingAtRelease) {
    f.role = StepRole::DestroysWithPending;
    f.establishes = "destroys " + name + " without waiting for " + queuedText(seq, r.queued) +
                    " (" + policyText + "): " + ctx + " is destroyed with work pending";
  } else if (!defenses.buffersBeforeContext) {
    f.role = StepRole::DestroysWithLiveBuffers;
    f.establishes = "destroys " + name + ", releasing " + ctx + " before its buffers (" +
                    policyText + "): the context goes while its buffers live";
  } else {
    f.role = StepRole::Destroys;
    f.establishes = "destroys " + name + " (" + ctx + ")";
    if (!r.queued.empty()) f.establishes += ", waiting first for " + queuedText(seq, r.queued);
  }
  if (pendingAtRelease && !defenses.buffersBeforeContext) {
    f.establishes += ", and before its buffers";
  }
  return f;
}

/// What a ctx_destroy of bare context `name`, `c`, establishes.
StepFacts ctxDestroyFacts(const std::string& name, ContextLife& c) {
  StepFacts f;
  c.alive = false;
  f.context = c.context;
  if (c.liveBuffers > 0) {
    f.role = StepRole::DestroysWithLiveBuffers;
    f.establishes = "destroys bare context " + name + " (#" + std::to_string(c.context) +
                    ") while its " + plural(c.liveBuffers, "buffer") +
                    (c.liveBuffers == 1 ? " lives" : " live") + ": orphaned, they keep it alive";
  } else {
    f = {StepRole::Destroys,
         "destroys bare context " + name + " (#" + std::to_string(c.context) + ")", c.context};
  }
  return f;
}

/// What a buf_destroy of buffer `name` of context `owner`, `c`, establishes.
StepFacts bufDestroyFacts(const std::string& name, const std::string& owner, ContextLife& c) {
  StepFacts f;
  --c.liveBuffers;
  f = {StepRole::FreesBuffer, "frees buffer " + name, c.context};
  if (c.alive) {
    f.establishes += " of " + owner + " (context #" + std::to_string(c.context) + ")";
  } else {
    f.establishes += ", orphaned since " + owner + " (context #" + std::to_string(c.context) +
                     ") was destroyed" +
                     (c.liveBuffers == 0 ? ": the context's memory goes with it" : "");
  }
  return f;
}

}  // namespace

std::vector<StepFacts> lifecycleFacts(const Sequence& seq, TeardownPolicy policy) {
  if (!hasRendererSemantics(seq.lifecycle())) return modelStepFacts(seq);
  const Defenses defenses = defensesOf(policy);
  const std::string policyText = "policy " + std::string(policyName(policy));
  std::map<std::string, RendererLife> renderers;
  // Bare contexts stay known after their destroy: their orphaned buffers may still be freed.
  std::map<std::string, ContextLife> contexts;
  std::map<std::string, std::string> buffers;  // live bare buffer -> its context's name
  uint32_t created = 0;  // each renderer makes one device context, as each ctx_create does

  std::vector<StepFacts> facts;
  for (std::size_t i = 0; i < seq.ops.size(); ++i) {
    const Operation& op = seq.ops[i];
    const std::string& name = op.names.at(0);
    const uint32_t count =
        rendererOp(op) == RendererOp::SetTextures ? static_cast<uint32_t>(op.arg("count")) : 0;
    StepFacts f;
    switch (rendererOp(op)) {
      case RendererOp::Create:
        renderers[name] = RendererLife{created, {}, 0};
        f = {StepRole::IntroducesContext,
             "introduces renderer " + name + ": " + contextText(created), created};
        ++created;
        break;
      case RendererOp::CtxCreate:
        contexts[name] = ContextLife{created, 0, 0, true};
        f = {StepRole::IntroducesContext,
             "introduces bare context " + name + ": " + contextText(created), created};
        ++created;
        break;
      case RendererOp::BufCreate: {
        ContextLife& c = contexts.at(name);
        f = {StepRole::Allocates,
             "allocates buffer " + op.names.at(1) + " in " + name + " (context #" +
                 std::to_string(c.context) + ")" +
                 (c.allocations == 0 ? ", the context's first allocation" : ""),
             c.context};
        ++c.allocations;
        ++c.liveBuffers;
        buffers[op.names.at(1)] = name;
        break;
      }
      case RendererOp::Draw: {
        RendererLife& r = renderers.at(name);
        f = {StepRole::QueuesWork,
             "queues a draw on " + name + " (context #" + std::to_string(r.context) +
                 "), pending until " + name + " next waits",
             r.context};
        r.queued.push_back(i);
        break;
      }
      case RendererOp::SetTextures:
        f = setTexturesFacts(seq, i, count, renderers.at(name), defenses, policyText);
        break;
      case RendererOp::Sync:
      case RendererOp::ReadBack: {
        RendererLife& r = renderers.at(name);
        f = {StepRole::Waits,
             std::string(rendererOp(op) == RendererOp::Sync ? "waits for " : "reads back ") + name +
                 (rendererOp(op) == RendererOp::Sync ? "'s queue"
                                                     : "'s framebuffer, waiting for its queue") +
                 (r.queued.empty() ? " (nothing queued)" : " (" + queuedText(seq, r.queued) + ")"),
             r.context};
        r.queued.clear();
        break;
      }
      case RendererOp::Destroy:
        f = destroyFacts(seq, name, renderers.at(name), defenses, policyText);
        renderers.erase(name);
        break;
      case RendererOp::CtxDestroy:
        f = ctxDestroyFacts(name, contexts.at(name));
        break;
      case RendererOp::BufDestroy: {
        const std::string owner = buffers.at(name);
        buffers.erase(name);
        f = bufDestroyFacts(name, owner, contexts.at(owner));
        break;
      }
      case RendererOp::Other:
        break;
    }
    facts.push_back(std::move(f));
  }
  return facts;
}

bool Explanation::Argument::isFree() const {
  return !experiments.empty() &&
         std::all_of(experiments.begin(), experiments.end(),
                     [](const Experiment& x) { return x.verdict == EditVerdict::Keeps; });
}

std::string Explanation::Insertion::describe(const Sequence& minimal) const {
  return Edit{Edit::Kind::Insert, position, {}, 0, inserted, {}}.describe(minimal);
}

std::vector<const Explanation::Insertion*> Explanation::preventing() const {
  std::vector<const Insertion*> out;
  for (const Insertion& ins : insertions) {
    if (ins.experiment.verdict == EditVerdict::Prevents) out.push_back(&ins);
  }
  return out;
}

namespace {

/// Queues each argument of the operations that run set to other values; returns the variants,
/// an argument's in the order of e.arguments.
std::vector<std::vector<Sequence>> queueArguments(Laboratory& lab, Explanation& e,
                                                  std::size_t reach) {
  const Sequence& m = e.minimal;
  std::vector<std::vector<Sequence>> probed;
  for (std::size_t i = 0; i < reach; ++i) {
    for (const auto& [name, value] : argumentsOf(m.ops[i])) {
      Explanation::Argument a{i, name, value, probeValues(m.ops[i], name), {}};
      std::vector<Sequence> variants;
      for (uint64_t v : a.tried) {
        Sequence s = m;
        setArgument(s.ops[i], name, v);
        lab.add(s);
        variants.push_back(std::move(s));
      }
      probed.push_back(std::move(variants));
      e.arguments.push_back(std::move(a));
    }
  }
  return probed;
}

/// Queues each valid insertion of one step into `prefix`, the operations that run; returns the
/// sequences, in the order of e.insertions.
std::vector<Sequence> queueInsertions(Laboratory& lab, Explanation& e, const Sequence& prefix) {
  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  std::vector<Sequence> inserted;
  ModelState model(m.lifecycle());
  for (std::size_t p = 0; p <= e.failingIndex && p <= n; ++p) {
    for (const Operation& op : insertableSteps(model)) {
      std::optional<Sequence> s = insertOperation(prefix, p, op);
      if (!s) continue;
      lab.add(*s);
      inserted.push_back(std::move(*s));
      e.insertions.push_back(Explanation::Insertion{p, op, {}});
    }
    if (p < n) model.applyValid(m.ops[p]);
  }
  return inserted;
}

/// Queues each step of `prefix` with a copy right after it; returns the sequences, none for a
/// step that cannot be repeated, in the order of e.repetitions.
std::vector<std::optional<Sequence>> queueRepetitions(Laboratory& lab, Explanation& e,
                                                      const Sequence& prefix) {
  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  const std::set<std::string> used = usedNames(m);
  std::vector<std::optional<Sequence>> repeated;
  for (std::size_t i = 0; i < n; ++i) {
    Explanation::Repetition r;
    r.index = i;
    std::set<std::string> names = used;
    const Operation copy = freshCopy(m.ops[i], names);
    std::optional<Sequence> s;
    if (i < e.failingIndex) s = insertOperation(prefix, i + 1, copy);  // else it would not run
    if (s) {
      r.copy = copy;
      lab.add(*s);
    }
    repeated.push_back(std::move(s));
    e.repetitions.push_back(std::move(r));
  }
  return repeated;
}

/// Threads: queues each operation of another thread free to overlap the failing one moved onto
/// its thread, then the whole sequence on one thread, last. An operation is free to overlap the
/// failing one when neither waits for the other, through any chain of waits. Returns the
/// sequences; none without threads.
std::vector<Sequence> queueOverlaps(Laboratory& lab, Explanation& e) {
  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  std::vector<Sequence> unthreaded;
  if (m.threadCount() <= 1 || e.failingIndex >= n) return unthreaded;
  const auto waits = threadWaits(m);
  std::vector<std::set<std::size_t>> before(n);  // every operation each one waits for
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t w : waits[i]) {
      before[i].insert(w);
      before[i].insert(before[w].begin(), before[w].end());
    }
  }
  const std::size_t f = e.failingIndex;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == f || m.ops[i].thread == m.ops[f].thread) continue;
    if (before[f].contains(i) || before[i].contains(f)) continue;
    Sequence s = m;
    s.ops[i].thread = m.ops[f].thread;
    lab.add(s);
    unthreaded.push_back(std::move(s));
    e.overlaps.push_back(Explanation::Overlap{i, {}});
  }
  unthreaded.push_back(onOneThread(m));
  lab.add(unthreaded.back());
  return unthreaded;
}

/// How many contexts the operations that run introduce, which are needed, and where the failure
/// happens with one more.
Explanation::Contexts contextCounts(const Explanation& e, std::size_t reach) {
  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  Explanation::Contexts c;
  c.allNeeded = true;
  for (std::size_t i = 0; i < reach; ++i) {
    if (!hasRendererSemantics(m.lifecycle())) break;
    const RendererOp kind = rendererOp(m.ops[i]);
    if (kind != RendererOp::Create && kind != RendererOp::CtxCreate) continue;
    ++c.introduced;
    c.allNeeded = c.allNeeded && e.removals[i].necessary();
    const Explanation::Repetition& r = e.repetitions[i];
    c.failedElsewhereWithOneMore = c.failedElsewhereWithOneMore || r.failedElsewhere;
    if (r.failingContext &&
        std::find(c.failingContextsWithOneMore.begin(), c.failingContextsWithOneMore.end(),
                  *r.failingContext) == c.failingContextsWithOneMore.end()) {
      c.failingContextsWithOneMore.push_back(*r.failingContext);
    }
  }
  c.allNeeded = c.allNeeded && c.introduced > 0;
  if (e.failingIndex < n) c.failingContext = e.facts[e.failingIndex].context;
  return c;
}

/// Shrinks e.original first when some single edit keeps `failure`: e.minimal, its outcome and the
/// steps become the shrink's.
void shrinkIfReducible(TrialRunner& trials, unsigned jobs, Laboratory& lab, Explanation& e,
                       const RunOutcome& failure, const ExplainOptions& options) {
  const auto progress = [&](const std::string& what) {
    if (options.onProgress) options.onProgress(what);
  };
  // The shrink candidates are the removals and simplifications explained below anyway, so
  // checking minimality first costs nothing when the sequence is minimal already.
  const auto candidates = shrinkCandidates(e.original);
  for (const auto& candidate : candidates)
    lab.add(candidate.second);
  progress("checking " + plural(lab.queued(), "single edit") + " for 1-minimality");
  lab.run();
  const bool reducible = std::any_of(candidates.begin(), candidates.end(), [&](const auto& c) {
    return lab.get(c.second).verdict == EditVerdict::Keeps;
  });
  if (reducible) {
    progress("not 1-minimal: shrinking");
    Shrinker shrinker(trials, jobs);
    shrinker.limitCandidates(options.candidateLimit);
    ShrinkResult shrunk = shrinker.shrink(e.original, failure,
                                          [&](const std::string& step) { progress("  " + step); });
    lab.addExecutions(shrunk.executions);
    e.minimal = std::move(shrunk.minimal);
    e.outcome = std::move(shrunk.outcome);
    e.shrinkSteps = std::move(shrunk.steps);
  }
}

}  // namespace

Explanation explainFailure(TrialRunner& trials, unsigned jobs, const Sequence& failing,
                           const RunOutcome& failure, const ExplainOptions& options) {
  if (!failure.failed()) {
    throw std::invalid_argument("explainFailure: the sequence passed: nothing to explain");
  }
  const auto started = std::chrono::steady_clock::now();
  const auto progress = [&](const std::string& what) {
    if (options.onProgress) options.onProgress(what);
  };
  const TeardownPolicy policy = trials.setup().policy;
  Explanation e;
  e.backend = trials.setup().backend;
  e.policy = std::string(policyName(policy));
  e.faults = trials.setup().faults;
  e.original = failing;
  e.minimal = failing;
  e.outcome = failure;
  e.key = FailureKey::of(failure);
  // A threaded experiment's tries: enough to see a failure of the known rate with 95% odds.
  const uint32_t tries = options.knownReproduction ? triesForRate(options.knownReproduction->first,
                                                                  options.knownReproduction->second)
                                                   : options.confirmations;
  // Only a threaded failure's experiments get several tries: its one-thread forms too, so that
  // "needs the overlap" is not a one-thread run's luck on a real backend.
  Laboratory lab(trials, jobs, e.key, options.candidateLimit,
                 failing.threadCount() > 1 ? tries : 1);

  if (options.shrink) shrinkIfReducible(trials, jobs, lab, e, failure, options);

  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  // Nothing placed after the failing operation can change it: it never runs.
  e.failingIndex = failingOperation(m, e.outcome).value_or(n);
  const std::size_t reach = std::min(e.failingIndex + 1, n);  // the operations that run
  e.facts = lifecycleFacts(m, policy);

  const auto simplifications = shrinkCandidates(m);
  for (const auto& candidate : simplifications)
    lab.add(candidate.second);

  std::vector<Sequence> removed;
  for (std::size_t i = 0; i < reach; ++i) {
    removed.push_back(removeOperation(m, i));
    lab.add(removed.back());
    Explanation::Removal r;
    r.index = i;
    for (std::size_t dependent : removalSet(m, i)) {
      if (dependent != i) r.alsoRemoved.push_back(dependent);
    }
    e.removals.push_back(std::move(r));
  }

  const std::vector<std::vector<Sequence>> probed = queueArguments(lab, e, reach);

  // Insertions and copies go into the operations that run: what follows the failure never runs,
  // and must not make an insertion before it look invalid (a release of something it frees).
  Sequence prefix = m;
  prefix.ops.resize(reach);
  const std::vector<Sequence> inserted = queueInsertions(lab, e, prefix);

  const std::vector<std::optional<Sequence>> repeated = queueRepetitions(lab, e, prefix);

  const std::vector<Sequence> unthreaded = queueOverlaps(lab, e);

  progress("running " + plural(lab.queued(), "experiment") + " on " +
           std::to_string(jobs == 0 ? 1 : jobs) + " job(s)");
  lab.run();

  e.oneMinimal =
      std::none_of(simplifications.begin(), simplifications.end(), [&](const auto& candidate) {
        return lab.get(candidate.second).verdict == EditVerdict::Keeps;
      });
  for (std::size_t i = 0; i < reach; ++i)
    e.removals[i].experiment = lab.get(removed[i]);
  for (std::size_t a = 0; a < e.arguments.size(); ++a) {
    for (const Sequence& s : probed[a])
      e.arguments[a].experiments.push_back(lab.get(s));
  }
  for (std::size_t k = 0; k < e.insertions.size(); ++k) {
    e.insertions[k].experiment = lab.get(inserted[k]);
  }
  for (std::size_t k = 0; k < e.overlaps.size(); ++k)
    e.overlaps[k].experiment = lab.get(unthreaded[k]);
  if (!unthreaded.empty()) e.oneThread = lab.get(unthreaded.back());
  for (std::size_t i = 0; i < n; ++i) {
    if (!repeated[i]) continue;
    Explanation::Repetition& r = e.repetitions[i];
    r.experiment = lab.get(*repeated[i]);
    const auto at = failingOperation(*repeated[i], r.experiment->outcome);
    if (r.experiment->verdict == EditVerdict::Keeps && at) {
      r.failingContext = lifecycleFacts(*repeated[i], policy)[*at].context;
      // The copy sits before the original failing step, which moved one place on.
      r.failedElsewhere = *at != e.failingIndex + 1;
    }
  }

  e.contexts = contextCounts(e, reach);

  if (options.knownReproduction) {
    e.reproduced = options.knownReproduction->first;
    e.confirmations = options.knownReproduction->second;
  } else {
    progress("replaying the minimal sequence " + plural(options.confirmations, "time"));
    Shrinker shrinker(trials, jobs);
    const auto r = shrinker.reproductions(m, e.key, options.confirmations);
    e.reproduced = r.hits;
    e.confirmations = options.confirmations;
    lab.addExecutions(r.executions);
  }

  e.executions = lab.executions();
  e.experimentsRun = lab.experiments();
  e.inconclusive = lab.inconclusive();
  e.elapsedSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return e;
}

std::string neededFailuresText(const Sequence& m) {
  std::string text;
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    const std::optional<Mark>& mark = m.ops[i].mark;
    if (!mark) continue;
    Operation unmarked = m.ops[i];
    unmarked.mark.reset();
    text += "- `" + operationText(unmarked) + "` (step " + std::to_string(i + 1) +
            ") to fail with " + std::string(failWordName(mark->word)) +
            (mark->nth == 1 ? std::string(" at its first call that can")
                            : " at its call " + std::to_string(mark->nth) + " of those that can") +
            "\n";
  }
  if (text.empty()) return {};
  return "It needs these calls to fail on purpose (failures.md); a shrink keeps a mark only where "
         "the failure needs it:\n\n" +
         text + "\n";
}

namespace {

/// The explanation's section on the necessary steps, the steps not needed, and those after the
/// failing one.
std::string necessaryStepsMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  const std::size_t n = e.minimal.ops.size();
  std::string md;
  md +=
      "\n## Necessary steps\n\nRemoving any one of these (with the steps that depend on it) "
      "makes the failure disappear.\n";
  std::vector<std::string> roles;
  for (const Explanation::Removal& r : e.removals) {
    const std::string role = roleKey(e.facts[r.index]);
    if (r.necessary() && std::find(roles.begin(), roles.end(), role) == roles.end()) {
      roles.push_back(role);
    }
  }
  for (const std::string& role : roles) {
    const auto first = std::find_if(e.removals.begin(), e.removals.end(), [&](const auto& r) {
      return roleKey(e.facts[r.index]) == role;
    });
    const StepFacts& f = e.facts[first->index];
    md += "\n**" + (f.modelRole.empty() ? std::string(roleHeading(f.role)) : roleWords(role)) +
          "**\n";
    for (const Explanation::Removal& r : e.removals) {
      if (!r.necessary() || roleKey(e.facts[r.index]) != role) continue;
      md += "- " + stepText(m, r.index) + ": " + e.facts[r.index].establishes;
      if (r.index == e.failingIndex) md += "; the failing operation";
      if (!r.alsoRemoved.empty()) {
        std::vector<std::string> with;
        for (std::size_t d : r.alsoRemoved)
          with.push_back(std::to_string(d + 1));
        md += " (its removal takes " + joined(with) + " with it)";
      }
      if (r.experiment.verdict == EditVerdict::Changes) {
        md += "; without it: " + outcomeText(r.experiment.outcome);
      }
      md += "\n";
    }
  }
  std::vector<std::string> notNeeded, unknown;
  for (const Explanation::Removal& r : e.removals) {
    if (r.experiment.verdict == EditVerdict::Keeps) notNeeded.push_back(stepText(m, r.index));
    if (r.experiment.verdict == EditVerdict::Inconclusive) unknown.push_back(stepText(m, r.index));
  }
  if (!notNeeded.empty()) {
    md += "\nNot needed (removing it keeps the failure): " + joined(notNeeded, "; ") + ".\n";
  }
  if (!unknown.empty()) md += "\nInconclusive removals: " + joined(unknown, "; ") + ".\n";
  if (e.removals.size() < n) {
    std::vector<std::string> after;
    for (std::size_t i = e.removals.size(); i < n; ++i)
      after.push_back(stepText(m, i));
    md +=
        "\nAfter the failing operation (never run, not explained): " + joined(after, "; ") + ".\n";
  }
  return md;
}

/// The explanation's section on threads: which overlaps the failure needs (none without threads).
std::string threadsMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  std::string md;
  if (e.oneThread) {
    md += "\n## Threads\n\nThe sequence runs on " + std::to_string(m.threadCount()) +
          " threads. With every operation on one thread: " + verdictText(*e.oneThread) + ".\n";
    for (const Explanation::Overlap& o : e.overlaps) {
      const Operation& op = m.ops[o.index];
      const Operation& failing = m.ops[e.failingIndex];
      md += "- " + std::string(o.needed() ? "needs" : "does not need") + " `" +
            std::string(op.name()) + "` (" + std::to_string(o.index + 1) + ") on thread " +
            std::to_string(op.thread) + " overlapping `" + std::string(failing.name()) + "` (" +
            std::to_string(e.failingIndex + 1) + ") on thread " + std::to_string(failing.thread) +
            ": moved onto one thread, " + verdictText(o.experiment) + "\n";
    }
    if (e.overlaps.empty()) {
      md += "No operation of another thread is free to overlap the failing one.\n";
    }
  }
  return md;
}

/// The explanation's section on arguments: which matter and which are free.
std::string argumentsMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  std::string md;
  md += "\n## Arguments\n\n";
  if (e.arguments.empty()) md += "No operation takes arguments.\n";
  for (const Explanation::Argument& a : e.arguments) {
    const ArgDecl& decl = *m.ops[a.index].form->arg(a.name);
    const auto values = [&](const std::vector<uint64_t>& vs) {
      std::vector<std::string> parts;
      for (const uint64_t v : vs)
        parts.push_back(decl.valueText(v));
      return joined(parts);
    };
    md +=
        "- `" + a.name + "` at " + stepText(m, a.index) + ", now " + decl.valueText(a.value) + ": ";
    if (a.isFree()) {
      md += "free: any value (tried " + values(a.tried) + ")\n";
      continue;
    }
    std::vector<std::string> effects;
    std::vector<uint64_t> kept;
    for (std::size_t k = 0; k < a.tried.size(); ++k) {
      const Experiment& x = a.experiments[k];
      if (x.verdict == EditVerdict::Keeps) {
        kept.push_back(a.tried[k]);
      } else {
        effects.push_back(decl.valueText(a.tried[k]) + " " + verdictText(x));
      }
    }
    md += "matters: " + joined(effects, "; ");
    if (!kept.empty()) md += "; " + values(kept) + " keep the failure";
    md += "\n";
  }
  return md;
}

/// The explanation's section on the single insertions that prevent the failure, and those that
/// change it.
std::string preventingMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  std::string md;
  md += "\n## Preventing steps\n\n";
  const auto preventing = e.preventing();
  std::size_t waitsTried = 0;
  for (const Explanation::Insertion& ins : e.insertions) {
    if (isWait(ins.inserted)) ++waitsTried;
  }
  if (preventing.empty()) {
    md += "No single inserted step prevents it (" + plural(e.insertions.size(), "insertion") +
          " tried).\n";
  } else {
    md += "Each of these single insertions makes it pass:\n";
    for (const Explanation::Insertion* ins : preventing)
      md += "- " + ins->describe(m) + "\n";
  }
  const bool waitPrevents = std::any_of(preventing.begin(), preventing.end(),
                                        [](const auto* ins) { return isWait(ins->inserted); });
  if (!waitPrevents && waitsTried > 0) {
    md += "\nNo single `sync` or `read_back` prevents it (" + plural(waitsTried, "placement") +
          " tried).\n";
  }
  std::vector<std::string> changes;
  for (const Explanation::Insertion& ins : e.insertions) {
    if (ins.experiment.verdict == EditVerdict::Changes ||
        ins.experiment.verdict == EditVerdict::Inconclusive) {
      changes.push_back(ins.describe(m) + ": " + verdictText(ins.experiment));
    }
  }
  if (!changes.empty()) {
    md += "\nThese neither keep nor prevent it:\n";
    for (const std::string& line : changes)
      md += "- " + line + "\n";
  }
  md +=
      std::string(hasRendererSemantics(m.lifecycle())
                      ? "\nTried: one `sync`, `read_back`, `set_textures` (default arguments) or "
                        "`destroy` of a live renderer, or `buf_destroy` / `ctx_destroy` of a live "
                        "bare buffer or context, at each position up to the failing operation: "
                      : "\nTried: every operation of the model on one live name alone (default "
                        "arguments), at each position up to the failing operation: ") +
      plural(e.insertions.size(), "valid insertion") + ", " +
      std::to_string(e.insertions.size() - preventing.size() - changes.size()) +
      " of them keep the failure.\n";
  return md;
}

/// The explanation's section on each step repeated right after itself.
std::string repetitionMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  std::string md;
  md +=
      "\n## Repetition\n\nEach step with a copy inserted right after it (introduced names "
      "fresh):\n";
  for (const Explanation::Repetition& r : e.repetitions) {
    md += "- " + stepText(m, r.index) + ": ";
    if (r.index == e.failingIndex) {
      md += "the failing operation\n";
    } else if (r.index > e.failingIndex) {
      md += "after the failing operation\n";
    } else if (!r.copy) {
      md += "cannot be repeated (a copy right after it is invalid)\n";
    } else {
      md += "repeated as `" + operationText(*r.copy) + "`: " + verdictText(*r.experiment);
      if (r.failingContext) md += ", in context #" + std::to_string(*r.failingContext);
      md += "\n";
    }
  }
  return md;
}

/// The explanation's section on how many contexts the failure needs, and in which it fails.
std::string countsMarkdown(const Explanation& e) {
  std::string md;
  const Explanation::Contexts& c = e.contexts;
  if (c.introduced > 0) {
    md += "\n## Counts\n\n";
    if (c.allNeeded) {
      md += "Needs at least " + plural(c.introduced, "context") + ": the sequence introduces " +
            std::to_string(c.introduced) +
            " and removing any one of them makes the failure "
            "disappear.";
    } else {
      md += "Introduces " + plural(c.introduced, "context") + "; not every one of them is needed.";
    }
    if (c.failingContext) {
      md += " It fails in " + contextText(*c.failingContext) + ".";
      const auto& more = c.failingContextsWithOneMore;
      if (!more.empty()) {
        const bool same = std::all_of(more.begin(), more.end(),
                                      [&](uint32_t k) { return k == *c.failingContext; });
        if (same) {
          md += " With one more context introduced earlier it still fails in context #" +
                std::to_string(*c.failingContext) +
                (c.failedElsewhereWithOneMore
                     ? ", at another step: the context's ordinal matters, not which step makes it."
                     : ", at the same step.");
        } else {
          std::vector<std::string> seen;
          for (uint32_t k : more)
            seen.push_back("#" + std::to_string(k));
          md += seen.size() == 1
                    ? " With one more context introduced earlier it fails in context " +
                          seen.front() + " instead: it is not tied to a context ordinal."
                    : " With one more context introduced at different places it fails in "
                      "contexts " +
                          joined(seen, " and ") + ": it is not tied to a context ordinal.";
        }
      }
    }
    md += "\n";
  }
  return md;
}

}  // namespace

std::string explanationMarkdown(const Explanation& e) {
  const Sequence& m = e.minimal;
  const std::size_t n = m.ops.size();
  std::string md = "# Explanation: " + briefOutcome(e.outcome) + "\n\n";
  md += "On " + e.backend + ", policy " + e.policy + ", faults " + e.faults + ": " +
        outcomeText(e.outcome) + ". Reproduced " + std::to_string(e.reproduced) + " of " +
        std::to_string(e.confirmations) + " replays.\n\n";
  if (!e.outcome.fault.empty()) {
    md += "Planted by the fault plan's rule `" + e.outcome.fault +
          "`: the sequence is how the renderer reaches it.\n\n";
  }
  md += "```\n";
  for (const Operation& op : m.ops)
    md += operationText(op) + "\n";
  md += "```\n\n";
  md += neededFailuresText(m);
  if (!e.shrinkSteps.empty()) {
    md += "Shrunk first, from " + plural(e.original.ops.size(), "operation") + " to " +
          std::to_string(n) + ": " + joined(e.shrinkSteps, "; ") + ".\n";
  }
  md += e.oneMinimal ? "The sequence is 1-minimal: no single removal or simplification keeps the "
                       "failure.\n"
                     : "The sequence is not 1-minimal: some single edit keeps the failure.\n";

  md += necessaryStepsMarkdown(e);
  md += threadsMarkdown(e);
  md += argumentsMarkdown(e);
  md += preventingMarkdown(e);
  md += repetitionMarkdown(e);
  md += countsMarkdown(e);

  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", e.elapsedSeconds);
  md += "\n---\n" + plural(e.experimentsRun, "experiment") + ", " +
        plural(e.executions, "execution") + ", " + seconds;
  if (e.inconclusive > 0) {
    md += "; " + plural(e.inconclusive, "experiment") + " inconclusive (the harness failed)";
  }
  md += ".\n";
  return md;
}

namespace {

/// A step's fields: its number, 1-based, and its text.
void writeStep(JsonWriter& j, const Sequence& m, std::size_t index) {
  j.key("at").value(static_cast<uint64_t>(index + 1));
  j.key("op").value(operationText(m.ops[index]));
}

/// The removals whose step is `necessary`, or not.
void writeRemovals(JsonWriter& j, const Explanation& e, bool necessary) {
  j.beginArray();
  for (const Explanation::Removal& r : e.removals) {
    if (r.necessary() != necessary) continue;
    j.beginObject();
    writeStep(j, e.minimal, r.index);
    j.key("role").value(roleKey(e.facts[r.index]));
    j.key("establishes").value(e.facts[r.index].establishes);
    j.key("context");
    if (e.facts[r.index].context) {
      j.value(*e.facts[r.index].context);
    } else {
      j.null();
    }
    j.key("also_removes").beginArray();
    for (std::size_t d : r.alsoRemoved)
      j.value(static_cast<uint64_t>(d + 1));
    j.endArray();
    j.key("verdict").value(verdictName(r.experiment.verdict));
    j.key("without");
    writeOutcome(j, r.experiment.outcome);
    j.endObject();
  }
  j.endArray();
}

/// The arguments that are `free`, or bound.
void writeArguments(JsonWriter& j, const Explanation& e, bool free) {
  j.beginArray();
  for (const Explanation::Argument& a : e.arguments) {
    if (a.isFree() != free) continue;
    j.beginObject();
    writeStep(j, e.minimal, a.index);
    j.key("argument").value(a.name);
    j.key("value").value(a.value);
    j.key("tried").beginArray();
    for (std::size_t k = 0; k < a.tried.size(); ++k) {
      j.beginObject();
      j.key("value").value(a.tried[k]);
      j.key("verdict").value(verdictName(a.experiments[k].verdict));
      j.key("outcome");
      writeOutcome(j, a.experiments[k].outcome);
      j.endObject();
    }
    j.endArray();
    j.endObject();
  }
  j.endArray();
}

/// The insertions that prevent the failure (`preventing`), or change it.
void writeInsertions(JsonWriter& j, const Explanation& e, bool preventing) {
  const Sequence& m = e.minimal;
  j.beginArray();
  for (const Explanation::Insertion& ins : e.insertions) {
    if ((ins.experiment.verdict == EditVerdict::Prevents) != preventing ||
        (!preventing && ins.experiment.verdict == EditVerdict::Keeps)) {
      continue;
    }
    j.beginObject();
    j.key("insert").value(operationText(ins.inserted));
    j.key("before");
    if (ins.position < m.ops.size()) {
      j.value(static_cast<uint64_t>(ins.position + 1));
    } else {
      j.value("end");
    }
    j.key("description").value(ins.describe(m));
    j.key("verdict").value(verdictName(ins.experiment.verdict));
    j.key("outcome");
    writeOutcome(j, ins.experiment.outcome);
    j.endObject();
  }
  j.endArray();
}

/// Each step repeated right after itself.
void writeRepetitions(JsonWriter& j, const Explanation& e) {
  j.key("repetition").beginArray();
  for (const Explanation::Repetition& r : e.repetitions) {
    j.beginObject();
    writeStep(j, e.minimal, r.index);
    j.key("copy");
    if (r.copy) {
      j.value(operationText(*r.copy));
    } else {
      j.null();
    }
    j.key("verdict");
    if (r.experiment) {
      j.value(verdictName(r.experiment->verdict));
      j.key("outcome");
      writeOutcome(j, r.experiment->outcome);
    } else {
      j.null();
    }
    j.key("failing_context");
    if (r.failingContext) {
      j.value(*r.failingContext);
    } else {
      j.null();
    }
    j.endObject();
  }
  j.endArray();
}

/// How many contexts the failure needs, and in which it fails.
void writeContexts(JsonWriter& j, const Explanation::Contexts& c) {
  j.key("contexts").beginObject();
  j.key("introduced").value(c.introduced);
  j.key("needs_at_least");
  if (c.allNeeded) {
    j.value(c.introduced);
  } else {
    j.null();
  }
  j.key("failing_context");
  if (c.failingContext) {
    j.value(*c.failingContext);
  } else {
    j.null();
  }
  j.key("failing_contexts_with_one_more").beginArray();
  for (uint32_t k : c.failingContextsWithOneMore)
    j.value(k);
  j.endArray();
  j.key("failed_elsewhere_with_one_more").value(c.failedElsewhereWithOneMore);
  j.endObject();
}

}  // namespace

std::string explanationJson(const Explanation& e) {
  const Sequence& m = e.minimal;
  JsonWriter j;
  j.beginObject();
  std::string operations;
  for (const Operation& op : m.ops)
    operations += operationText(op) + "\n";
  j.key("minimal_sequence").value(operations);
  j.key("outcome");
  writeOutcome(j, e.outcome);
  j.key("one_minimal").value(e.oneMinimal);
  j.key("failures").beginArray();
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    if (!m.ops[i].mark) continue;
    j.beginObject();
    j.key("at").value(static_cast<uint64_t>(i + 1));
    j.key("op").value(operationText(m.ops[i]));
    j.key("word").value(failWordName(m.ops[i].mark->word));
    j.key("call").value(static_cast<uint64_t>(m.ops[i].mark->nth));
    j.endObject();
  }
  j.endArray();
  j.key("shrink_steps").beginArray();
  for (const std::string& step : e.shrinkSteps)
    j.value(step);
  j.endArray();

  j.key("necessary");
  writeRemovals(j, e, true);
  j.key("not_necessary");
  writeRemovals(j, e, false);

  j.key("free_arguments");
  writeArguments(j, e, true);
  j.key("bound_arguments");
  writeArguments(j, e, false);

  j.key("preventing");
  writeInsertions(j, e, true);
  j.key("changing");
  writeInsertions(j, e, false);
  j.key("insertions_tried").value(static_cast<uint64_t>(e.insertions.size()));
  writeRepetitions(j, e);
  writeContexts(j, e.contexts);

  j.key("reproduced").value(e.reproduced);
  j.key("confirmations").value(e.confirmations);
  j.key("executions").value(e.executions);
  j.key("inconclusive").value(e.inconclusive);
  j.endObject();
  std::string text = j.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

std::filesystem::path explanationPath(const std::filesystem::path& sequenceFile,
                                      const std::filesystem::path& outDir, const Explanation& e) {
  const std::filesystem::path folder = sequenceFile.parent_path();
  if (sequenceFile.filename() == "minimal.seq" &&
      std::filesystem::exists(folder / "finding.json")) {
    return folder / "explanation.md";
  }
  Finding f;
  f.outcome = e.outcome;
  f.minimal = e.minimal;
  return outDir / f.id() / "explanation.md";
}

}  // namespace gpufuzz
