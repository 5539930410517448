// Explainer.cpp: the single-edit experiments on a minimal failing sequence, as a plan of steps:
// each step queues one kind of edit, one laboratory runs them all at once, and each step reads
// its verdicts back into the explanation.
#include "harness/search/Explainer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include "harness/search/Finding.h"
#include "model/SequenceEdits.h"
#include "model/Text.h"
#include "model/renderer/ReferenceModel.h"

namespace gpufuzz {

namespace {

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

}  // namespace

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

/// What the steps of the plan share: the laboratory, the explanation they fill, and the
/// operations that run, the failing one last.
struct Plan {
  Laboratory& lab;
  Explanation& e;
  TeardownPolicy policy;
  std::size_t reach = 0;  // how many operations run: nothing after the failing one can change it
  Sequence prefix;        // those operations alone
};

/// Reads a step's verdicts back into the explanation, once the laboratory ran every experiment.
using Reader = std::function<void(const Plan&)>;

/// Whether the sequence is 1-minimal: no removal or simplification a shrink tries keeps the
/// failure.
Reader queueSimplifications(Plan& plan) {
  auto candidates = shrinkCandidates(plan.e.minimal);
  for (const auto& candidate : candidates)
    plan.lab.add(candidate.second);
  return [candidates = std::move(candidates)](const Plan& p) {
    p.e.oneMinimal = std::none_of(candidates.begin(), candidates.end(), [&](const auto& c) {
      return p.lab.get(c.second).verdict == EditVerdict::Keeps;
    });
  };
}

/// Which steps the failure needs: each operation that runs removed, with its dependents.
Reader queueRemovals(Plan& plan) {
  const Sequence& m = plan.e.minimal;
  std::vector<Sequence> removed;
  for (std::size_t i = 0; i < plan.reach; ++i) {
    removed.push_back(removeOperation(m, i));
    plan.lab.add(removed.back());
    Explanation::Removal r;
    r.index = i;
    for (std::size_t dependent : removalSet(m, i)) {
      if (dependent != i) r.alsoRemoved.push_back(dependent);
    }
    plan.e.removals.push_back(std::move(r));
  }
  return [removed = std::move(removed)](const Plan& p) {
    for (std::size_t i = 0; i < removed.size(); ++i)
      p.e.removals[i].experiment = p.lab.get(removed[i]);
  };
}

/// Which arguments matter: each argument of the operations that run set to other values.
Reader queueArguments(Plan& plan) {
  const Sequence& m = plan.e.minimal;
  std::vector<std::vector<Sequence>> probed;  // an argument's variants, as in e.arguments
  for (std::size_t i = 0; i < plan.reach; ++i) {
    for (const auto& [name, value] : argumentsOf(m.ops[i])) {
      Explanation::Argument a{i, name, value, probeValues(m.ops[i], name), {}};
      std::vector<Sequence> variants;
      for (uint64_t v : a.tried) {
        Sequence s = m;
        setArgument(s.ops[i], name, v);
        plan.lab.add(s);
        variants.push_back(std::move(s));
      }
      probed.push_back(std::move(variants));
      plan.e.arguments.push_back(std::move(a));
    }
  }
  return [probed = std::move(probed)](const Plan& p) {
    for (std::size_t a = 0; a < probed.size(); ++a) {
      for (const Sequence& s : probed[a])
        p.e.arguments[a].experiments.push_back(p.lab.get(s));
    }
  };
}

/// What prevents the failure: each valid insertion of one step into the operations that run.
/// They go into the prefix alone, so that a release after the failure, which never runs, makes
/// no insertion before it invalid.
Reader queueInsertions(Plan& plan) {
  const Sequence& m = plan.e.minimal;
  const std::size_t n = m.ops.size();
  std::vector<Sequence> inserted;  // as in e.insertions
  ModelState model(m.lifecycle());
  for (std::size_t at = 0; at <= plan.e.failingIndex && at <= n; ++at) {
    for (const Operation& op : insertableSteps(model)) {
      std::optional<Sequence> s = insertOperation(plan.prefix, at, op);
      if (!s) continue;
      plan.lab.add(*s);
      inserted.push_back(std::move(*s));
      plan.e.insertions.push_back(Explanation::Insertion{at, op, {}});
    }
    if (at < n) model.applyValid(m.ops[at]);
  }
  return [inserted = std::move(inserted)](const Plan& p) {
    for (std::size_t k = 0; k < inserted.size(); ++k)
      p.e.insertions[k].experiment = p.lab.get(inserted[k]);
  };
}

/// What one more of a step does: each step before the failing one with a copy right after it,
/// its introduced names fresh. A copy of a context's creation shows whether the failure follows
/// the context's ordinal.
Reader queueRepetitions(Plan& plan) {
  const Sequence& m = plan.e.minimal;
  const std::set<std::string> used = usedNames(m);
  std::vector<std::optional<Sequence>> repeated;  // as in e.repetitions; none where invalid
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    Explanation::Repetition r;
    r.index = i;
    std::set<std::string> names = used;
    const Operation copy = freshCopy(m.ops[i], names);
    std::optional<Sequence> s;
    if (i < plan.e.failingIndex)
      s = insertOperation(plan.prefix, i + 1, copy);  // else it never runs
    if (s) {
      r.copy = copy;
      plan.lab.add(*s);
    }
    repeated.push_back(std::move(s));
    plan.e.repetitions.push_back(std::move(r));
  }
  return [repeated = std::move(repeated)](const Plan& p) {
    for (std::size_t i = 0; i < repeated.size(); ++i) {
      if (!repeated[i]) continue;
      Explanation::Repetition& r = p.e.repetitions[i];
      r.experiment = p.lab.get(*repeated[i]);
      const auto at = failingOperation(*repeated[i], r.experiment->outcome);
      if (r.experiment->verdict == EditVerdict::Keeps && at) {
        r.failingContext = lifecycleFacts(*repeated[i], p.policy)[*at].context;
        // The copy sits before the original failing step, which moved one place on.
        r.failedElsewhere = *at != p.e.failingIndex + 1;
      }
    }
  };
}

/// Which overlaps of threads the failure needs: each operation of another thread free to overlap
/// the failing one moved onto its thread, then the whole sequence on one thread, last. An
/// operation is free to overlap the failing one when neither waits for the other, through any
/// chain of waits. Nothing for a sequence on one thread.
Reader queueOverlaps(Plan& plan) {
  const Sequence& m = plan.e.minimal;
  const std::size_t n = m.ops.size();
  if (m.threadCount() <= 1 || plan.e.failingIndex >= n) return [](const Plan&) {};
  const auto waits = threadWaits(m);
  std::vector<std::set<std::size_t>> before(n);  // every operation each one waits for
  for (std::size_t i = 0; i < n; ++i) {
    for (const std::size_t w : waits[i]) {
      before[i].insert(w);
      before[i].insert(before[w].begin(), before[w].end());
    }
  }
  const std::size_t f = plan.e.failingIndex;
  std::vector<Sequence> unthreaded;  // as in e.overlaps, then the one-thread sequence
  for (std::size_t i = 0; i < n; ++i) {
    if (i == f || m.ops[i].thread == m.ops[f].thread) continue;
    if (before[f].contains(i) || before[i].contains(f)) continue;
    Sequence s = m;
    s.ops[i].thread = m.ops[f].thread;
    plan.lab.add(s);
    unthreaded.push_back(std::move(s));
    plan.e.overlaps.push_back(Explanation::Overlap{i, {}});
  }
  unthreaded.push_back(onOneThread(m));
  plan.lab.add(unthreaded.back());
  return [unthreaded = std::move(unthreaded)](const Plan& p) {
    for (std::size_t k = 0; k < p.e.overlaps.size(); ++k)
      p.e.overlaps[k].experiment = p.lab.get(unthreaded[k]);
    p.e.oneThread = p.lab.get(unthreaded.back());
  };
}

/// A step of the plan: it queues one kind of single edit, and returns what reads their verdicts.
using Step = Reader (*)(Plan&);

/// The plan, in the order its experiments are queued.
constexpr Step kPlan[] = {
    queueSimplifications,  // is the sequence 1-minimal
    queueRemovals,         // which steps the failure needs
    queueArguments,        // which argument values it needs
    queueInsertions,       // which single inserted step prevents it
    queueRepetitions,      // what one more of a step does
    queueOverlaps,         // which overlaps of threads it needs
};

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

/// How often the minimal sequence fails alike: measured already, or measured now by replays.
void measureReproduction(TrialRunner& trials, unsigned jobs, Laboratory& lab, Explanation& e,
                         const ExplainOptions& options) {
  if (options.knownReproduction) {
    e.reproduced = options.knownReproduction->first;
    e.confirmations = options.knownReproduction->second;
    return;
  }
  if (options.onProgress) {
    options.onProgress("replaying the minimal sequence " + plural(options.confirmations, "time"));
  }
  Shrinker shrinker(trials, jobs);
  const auto r = shrinker.reproductions(e.minimal, e.key, options.confirmations);
  e.reproduced = r.hits;
  e.confirmations = options.confirmations;
  lab.addExecutions(r.executions);
}

}  // namespace

Explanation explainFailure(TrialRunner& trials, unsigned jobs, const Sequence& failing,
                           const RunOutcome& failure, const ExplainOptions& options) {
  if (!failure.failed()) {
    throw std::invalid_argument("explainFailure: the sequence passed: nothing to explain");
  }
  const auto started = std::chrono::steady_clock::now();
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

  const std::size_t n = e.minimal.ops.size();
  // Nothing placed after the failing operation can change it: it never runs.
  e.failingIndex = failingOperation(e.minimal, e.outcome).value_or(n);
  e.facts = lifecycleFacts(e.minimal, policy);
  Plan plan{lab, e, policy, std::min(e.failingIndex + 1, n), e.minimal};
  plan.prefix.ops.resize(plan.reach);

  std::vector<Reader> readers;
  for (const Step step : kPlan)
    readers.push_back(step(plan));
  if (options.onProgress) {
    options.onProgress("running " + plural(lab.queued(), "experiment") + " on " +
                       std::to_string(jobs == 0 ? 1 : jobs) + " job(s)");
  }
  lab.run();
  for (const Reader& read : readers)
    read(plan);
  e.contexts = contextCounts(e, plan.reach);

  measureReproduction(trials, jobs, lab, e, options);
  e.executions = lab.executions();
  e.experimentsRun = lab.experiments();
  e.inconclusive = lab.inconclusive();
  e.elapsedSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return e;
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
