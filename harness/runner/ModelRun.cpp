// ModelRun.cpp: a runtime model's sequence on its executor.
#include "harness/runner/ModelRun.h"

#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/runner/SequenceExecutor.h"
#include "harness/runner/ThreadLanes.h"
#include "model/LifecycleModel.h"
#include "model/ModelState.h"
#include "model/Operation.h"
#include "renderer/device/DeviceError.h"
#include "renderer/device/RuntimeSeam.h"

namespace gpufuzz {

namespace {

/// The executor's calls: its own state one thread at a time, unless it keeps it safe itself; its
/// runtime calls from every thread at once (seam::StateLock).
class Calls {
 public:
  Calls(ModelExecutor& executor, const LifecycleModel& model)
      : executor_(executor), model_(model) {}

  void run(const Operation& op, uint32_t ordinal) {
    std::vector<ModelCall::Arg> args;
    const OpDecl& decl = *op.form;
    args.reserve(decl.args.size());
    for (std::size_t i = 0; i < decl.args.size(); ++i) {
      const ArgDecl& a = decl.args[i];
      const uint64_t value = i < op.args.size() ? op.args[i] : a.defaultValue;
      args.push_back(ModelCall::Arg{
          a.key, value, a.isWord() ? std::string_view(a.words.at(value)) : std::string_view()});
    }
    const ModelCall call{decl.name, op.names, args, ordinal};
    inTurn([&] { executor_.run(call); });
  }

  /// After `op` failed as its mark asked: the names it ends are ended as if it had run, so what
  /// the executor still holds of them is released now (docs/failures.md). A name the operation
  /// already took is no longer the executor's (its lookup's std::logic_error).
  void releaseEnded(const Operation& op) {
    for (std::size_t i = 0; i < op.names.size(); ++i) {
      if (op.useOfName(i) != SlotUse::End) continue;
      const std::string_view kind = model_.resources[op.kindOfName(i)].kind;
      try {
        inTurn([&] { executor_.release(kind, op.names[i]); });
      } catch (const std::logic_error&) {
        // Taken before the failing call: the operation's own release came first.
      }
    }
  }

 private:
  /// `call` alone in the executor's own state unless it keeps that safe itself.
  template <typename Call>
  void inTurn(Call call) {
    if (executor_.threadSafe()) return call();
    const seam::StateLock lock(mutex_);
    call();
  }

  ModelExecutor& executor_;
  const LifecycleModel& model_;
  std::mutex mutex_;
};

/// The default release of each kind of `model` that has one (LifecycleModel::defaultRelease).
std::vector<DefaultRelease> defaultReleasesOf(const LifecycleModel& model) {
  std::vector<DefaultRelease> releases;
  for (std::size_t k = 0; k < model.resources.size(); ++k) {
    const OpDecl* op = model.defaultRelease(k);
    if (op == nullptr) continue;
    DefaultRelease release{model.resources[k].kind, op->name, {}};
    for (const ArgDecl& a : op->args) {
      release.args.push_back(DefaultRelease::Arg{
          a.key, a.defaultValue, a.isWord() ? a.words.at(a.defaultValue) : std::string()});
    }
    releases.push_back(std::move(release));
  }
  return releases;
}

/// What `body` threw, as the outcome of operation `kind` at `at`, or nothing.
template <typename Body>
std::optional<RunOutcome> outcomeOf(At at, const std::string& kind, Body body) {
  try {
    body();
  } catch (const InvalidUse& e) {
    return RunOutcome{OutcomeClass::Invalid, at, kind, e.what(), {}};
  } catch (const DeviceError& e) {
    return RunOutcome{OutcomeClass::Error, at, kind, e.what(), {}};
  } catch (const DataMismatch& e) {
    return RunOutcome{OutcomeClass::Mismatch, at, kind, e.what(), {}};
  }
  return std::nullopt;
}

/// The mark's runtime-call failure armed on this thread for one operation, disarmed however it
/// ends.
class SeamMark {
 public:
  explicit SeamMark(const Operation& op) : on_(op.mark.has_value()) {
    if (on_) seam::arm(callFailureOf(*op.mark));
  }
  ~SeamMark() { fired(); }
  SeamMark(const SeamMark&) = delete;
  SeamMark& operator=(const SeamMark&) = delete;
  /// Disarms, once: whether the marked call came and failed.
  bool fired() {
    if (on_) fired_ = seam::disarm().has_value();
    on_ = false;
    return fired_;
  }

 private:
  bool on_;
  bool fired_ = false;
};

StepEnd runStep(Calls& calls, const Operation& op, At at, ProgressListener& progress) {
  const std::string kind(op.name());
  progress.begin(at, kind);
  SeamMark armed(op);
  try {
    calls.run(op, at.ordinal);
  } catch (const DeviceError& e) {
    // InvalidUse is a DeviceError too: a rule broken after a failed call is a finding.
    const bool invalid = dynamic_cast<const InvalidUse*>(&e) != nullptr;
    const bool marked = armed.fired();
    if (!invalid && (marked || ranOutForReal(e.what(), op.form->fails.has(FailWord::Oom)))) {
      // A release that fails after the failure is the operation's outcome, as any failed call.
      if (std::optional<RunOutcome> released =
              outcomeOf(at, kind, [&] { calls.releaseEnded(op); })) {
        return {std::move(released)};
      }
      progress.failed(at, marked ? std::string(e.what()) : realFailureDetail(e.what()));
      return {std::nullopt, true};
    }
    return {outcomeOf(at, kind, [&] { throw; })};
  } catch (const DataMismatch&) {
    return {outcomeOf(at, kind, [&] { throw; })};
  }
  progress.done(at);
  return {};
}

/// Which operations ran and which names were never made, as operations end on any thread.
class Ran {
 public:
  explicit Ran(const Sequence& seq) : ran_(seq.ops.size(), false) {}
  /// Whether operation `i` is skipped: it uses a name never made.
  bool skips(const Operation& op) {
    const std::lock_guard lock(mutex_);
    return unmade_.skips(op);
  }
  void ended(std::size_t i, const Operation& op, bool failed) {
    const std::lock_guard lock(mutex_);
    ran_[i] = true;
    if (failed) unmade_.failed(op);
  }
  /// Leftovers of `seq`, kind by kind in the model's release order, each in creation order:
  /// what the operations that ran made and did not end, but for names never made.
  std::vector<std::pair<std::string_view, std::string>> leftovers(const Sequence& seq) {
    const LifecycleModel& model = seq.lifecycle();
    ModelState state(model);
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      if (ran_[i]) state.applyValid(seq.ops[i]);
    }
    std::vector<std::pair<std::string_view, std::string>> left;
    for (const std::size_t kind : model.release) {
      for (const std::size_t n : state.alive(kind)) {
        const std::string& name = state.names()[n].name;
        if (unmade_.unmade(name)) continue;
        left.emplace_back(model.resources[kind].kind, name);
      }
    }
    return left;
  }

 private:
  std::mutex mutex_;
  std::vector<bool> ran_;
  UnmadeNames unmade_;
};

/// Operation `i` of `seq` on the executor, skipped or run: its failure, or nothing.
std::optional<RunOutcome> runOrSkipOnExecutor(const Sequence& seq, std::size_t i, Calls& calls,
                                              Ran& ran, ProgressListener& progress) {
  return runOrSkip(seq, i, ran, progress,
                   [&](const Operation& op, At at) { return runStep(calls, op, at, progress); });
}

/// The operations on their threads: the failure of the lowest ordinal, or nothing.
std::optional<RunOutcome> runThreads(const Sequence& seq, Calls& calls, Ran& ran,
                                     ProgressListener& progress,
                                     std::optional<ScheduleChoice> schedule) {
  ThreadLanes lanes(seq, schedule);
  progress.start();
  std::mutex mutex;
  std::map<std::size_t, RunOutcome> failures;
  // The runner's own failure on a thread (a bug, not the runtime's) is thrown from here once
  // every thread has finished, as on one thread.
  std::exception_ptr internal;
  lanes.run([&](std::size_t i) {
    try {
      std::optional<RunOutcome> failed = runOrSkipOnExecutor(seq, i, calls, ran, progress);
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

RunOutcome executeModelSequence(const Sequence& seq, ModelExecutor& executor,
                                ProgressListener& progress,
                                std::optional<ScheduleChoice> schedule) {
  Calls calls(executor, seq.lifecycle());
  executor.setDefaultReleases(defaultReleasesOf(seq.lifecycle()));
  Ran ran(seq);
  if (seq.threadCount() > 1) {
    if (std::optional<RunOutcome> failed = runThreads(seq, calls, ran, progress, schedule))
      return *failed;
  } else {
    progress.start();
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      if (std::optional<RunOutcome> failed = runOrSkipOnExecutor(seq, i, calls, ran, progress))
        return *failed;
    }
  }
  const std::string end(kEndOperation);
  progress.begin(At{}, end);
  if (std::optional<RunOutcome> failed = outcomeOf(At{}, end, [&] {
        for (const auto& [kind, name] : ran.leftovers(seq))
          executor.release(kind, name);
      }))
    return *failed;
  progress.done(At{});
  const std::string held = executor.leaked();
  if (!held.empty()) return RunOutcome{OutcomeClass::Leak, std::nullopt, "", held, {}};
  return RunOutcome{};
}

}  // namespace gpufuzz
