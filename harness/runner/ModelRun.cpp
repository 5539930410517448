// ModelRun.cpp: a runtime model's sequence on its executor.
#include "harness/runner/ModelRun.h"

#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "harness/runner/ThreadLanes.h"
#include "model/ModelState.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

namespace {

/// The executor's calls, one at a time unless it takes them from several threads at once.
class Calls {
 public:
  explicit Calls(ModelExecutor& executor) : executor_(executor) {}

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
    if (executor_.threadSafe()) return executor_.run(call);
    const std::lock_guard lock(mutex_);
    executor_.run(call);
  }

 private:
  ModelExecutor& executor_;
  std::mutex mutex_;
};

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

std::optional<RunOutcome> runStep(Calls& calls, const Operation& op, At at,
                                  ProgressListener& progress) {
  const std::string kind(op.name());
  progress.begin(at, kind);
  std::optional<RunOutcome> failed = outcomeOf(at, kind, [&] { calls.run(op, at.ordinal); });
  if (!failed) progress.done(at);
  return failed;
}

/// The operations on their threads: the failure of the lowest ordinal, or nothing.
std::optional<RunOutcome> runThreads(const Sequence& seq, Calls& calls,
                                     ProgressListener& progress) {
  ThreadLanes lanes(seq, std::nullopt);
  progress.start();
  std::mutex mutex;
  std::map<std::size_t, RunOutcome> failures;
  // The runner's own failure on a thread (a bug, not the runtime's) is thrown from here once
  // every thread has finished, as on one thread.
  std::exception_ptr internal;
  lanes.run([&](std::size_t i) {
    try {
      std::optional<RunOutcome> failed =
          runStep(calls, seq.ops[i], At{static_cast<uint32_t>(i + 1)}, progress);
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

/// Leftovers of `seq`, kind by kind in the model's release order, each in creation order.
std::vector<std::pair<std::string_view, std::string>> leftovers(const Sequence& seq) {
  const LifecycleModel& model = seq.lifecycle();
  ModelState state(model);
  for (const Operation& op : seq.ops)
    state.applyValid(op);
  std::vector<std::pair<std::string_view, std::string>> left;
  for (const std::size_t kind : model.release) {
    for (const std::size_t i : state.alive(kind))
      left.emplace_back(model.resources[kind].kind, state.names()[i].name);
  }
  return left;
}

}  // namespace

RunOutcome executeModelSequence(const Sequence& seq, ModelExecutor& executor,
                                ProgressListener& progress) {
  Calls calls(executor);
  if (seq.threadCount() > 1) {
    if (std::optional<RunOutcome> failed = runThreads(seq, calls, progress)) return *failed;
  } else {
    progress.start();
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      if (std::optional<RunOutcome> failed =
              runStep(calls, seq.ops[i], At{static_cast<uint32_t>(i + 1)}, progress))
        return *failed;
    }
  }
  const std::string end(kEndOperation);
  progress.begin(At{}, end);
  if (std::optional<RunOutcome> failed = outcomeOf(At{}, end, [&] {
        for (const auto& [kind, name] : leftovers(seq))
          executor.release(kind, name);
      }))
    return *failed;
  progress.done(At{});
  const std::string held = executor.leaked();
  if (!held.empty()) return RunOutcome{OutcomeClass::Leak, std::nullopt, "", held, {}};
  return RunOutcome{};
}

}  // namespace gpufuzz
