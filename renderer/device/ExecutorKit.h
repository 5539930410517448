// ExecutorKit.h: the parts every model executor (ModelExecutor.h) shares, written once: the live
// names of each kind, the table of operations, the release of leftovers, the failure latch and
// the leak report.
//
// The contract:
// - kit::Kind<T> holds the live objects of one kind of the model by name. named() and take()
//   throw std::logic_error naming the executor, the kind and the name when it is not live. The
//   runner relies on that error after a marked failure (ModelRun.cpp), so it is part of the kit.
//   References stay valid while other names come and go, since threads keep them across calls.
//   Iteration is in name order; inCreationOrder() gives the oldest first.
// - kit::OpTable<E> maps each operation of the model to its handler, a member of executor E, with
//   optional data of the executor's own per operation (Extra). run() calls the handler of a call.
//   An unknown operation is a std::logic_error: the table and the model file disagree.
// - Release: a leftover is released by its kind's default release operation, the handler of that
//   operation called with the name alone. The model says which operation that is, and the runner
//   tells the executor (ModelExecutor::setDefaultReleases), so no executor writes it down. A kind
//   without one, or one the executor ends another way, registers an override in the table.
// - kit::tableDisagreements() compares a table's shape with its model file: every operation of the
//   model has a handler, every handler an operation, every kind a way to be released. A test runs
//   it for each executor, so a table cannot drift from its model unnoticed.
// - kit::FailureLatch records that a call failed, so the destructor leaves the runtime alone.
//   kit::LeakReport joins what leaked() finds into one line.
// - Nothing here locks: each executor keeps its own state safe as ModelExecutor.h requires.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <map>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "renderer/device/ModelExecutor.h"

namespace gpufuzz::kit {

/// The live objects of one kind of the model, by name.
template <typename T>
class Kind {
 public:
  /// `owner` and `kind` are what messages call the executor and the kind ("opencl executor",
  /// "buffer").
  Kind(std::string owner, std::string kind) : owner_(std::move(owner)), kind_(std::move(kind)) {}
  Kind(const Kind&) = delete;
  Kind& operator=(const Kind&) = delete;

  /// Makes `name` live with `object`, replacing any object of that name.
  T& add(const std::string& name, T object) {
    std::erase(order_, name);
    order_.push_back(name);
    return objects_.insert_or_assign(name, std::move(object)).first->second;
  }
  /// The object of `name`; std::logic_error when it is not live.
  T& named(const std::string& name) {
    auto it = objects_.find(name);
    if (it == objects_.end()) throw unknown(name);
    return it->second;
  }
  const T& named(const std::string& name) const {
    auto it = objects_.find(name);
    if (it == objects_.end()) throw unknown(name);
    return it->second;
  }
  /// The object of `name`, or null when it is not live.
  T* find(const std::string& name) {
    auto it = objects_.find(name);
    return it == objects_.end() ? nullptr : &it->second;
  }
  const T* find(const std::string& name) const {
    auto it = objects_.find(name);
    return it == objects_.end() ? nullptr : &it->second;
  }
  bool contains(const std::string& name) const { return objects_.contains(name); }
  /// Takes `name` out, its object with it; std::logic_error when it is not live.
  T take(const std::string& name) {
    auto it = objects_.find(name);
    if (it == objects_.end()) throw unknown(name);
    T object = std::move(it->second);
    objects_.erase(it);
    std::erase(order_, name);
    return object;
  }
  /// Forgets `name` if it is live.
  void erase(const std::string& name) {
    objects_.erase(name);
    std::erase(order_, name);
  }
  /// The live names, the oldest first.
  const std::vector<std::string>& inCreationOrder() const { return order_; }
  std::size_t size() const { return objects_.size(); }
  bool empty() const { return objects_.empty(); }
  /// Pairs of name and object, in name order.
  auto begin() { return objects_.begin(); }
  auto end() { return objects_.end(); }
  auto begin() const { return objects_.begin(); }
  auto end() const { return objects_.end(); }
  const std::string& kind() const { return kind_; }

 private:
  std::logic_error unknown(const std::string& name) const {
    return std::logic_error(owner_ + ": no live " + kind_ + " named " + name);
  }

  std::string owner_;
  std::string kind_;
  std::map<std::string, T> objects_;
  std::vector<std::string> order_;
};

/// What a test compares with an executor's model file (tableDisagreements).
struct TableShape {
  /// The model's name ("opencl").
  std::string_view model;
  /// Every operation the table has a handler for, in the table's order.
  std::vector<std::string_view> operations;
  /// The kinds whose leftovers the executor releases its own way (OpTable::Override).
  std::vector<std::string_view> overrides;
};

/// What tableDisagreements needs of a model file, as the model's own parser reads it.
struct ModelOutline {
  std::string name;
  std::vector<std::string> operations;
  std::vector<std::string> kinds;
  /// The kinds with a default release operation (ModelExecutor::DefaultRelease).
  std::vector<std::string> releasedByDefault;
};

/// Where `table` and `model` disagree, one sentence each; empty when they agree. Checked: each
/// operation of the model has exactly one handler, each handler is for an operation of the model,
/// each kind has a default release or an override, and each override is for a kind of the model.
std::vector<std::string> tableDisagreements(const TableShape& table, const ModelOutline& model);

/// The default release of each kind, as the runner told them (ModelExecutor::setDefaultReleases).
class DefaultReleases {
 public:
  void set(std::span<const DefaultRelease> releases) {
    releases_.assign(releases.begin(), releases.end());
  }
  /// The default release of `kind`, or null when the model gives none.
  const DefaultRelease* of(std::string_view kind) const {
    for (const DefaultRelease& r : releases_) {
      if (r.kind == kind) return &r;
    }
    return nullptr;
  }

 private:
  std::vector<DefaultRelease> releases_;
};

/// No data of the executor's own per operation.
struct NoExtra {};

/// The operations of one executor E, each with its handler.
template <typename E, typename Extra = NoExtra>
class OpTable {
 public:
  using Handler = void (E::*)(const ModelCall&);
  using Release = void (E::*)(const std::string& name);
  struct Op {
    std::string_view name;
    Handler handler;
    /// The executor's own data about the operation (which lock it takes, say).
    Extra extra{};
  };
  /// Releases a leftover of `kind` the executor's own way, in place of the default release.
  struct Override {
    std::string_view kind;
    Release release;
  };

  /// `owner` names the executor in messages ("opencl executor"); `model` is its model's name.
  OpTable(std::string owner, std::string_view model, std::vector<Op> ops,
          std::vector<Override> overrides = {})
      : owner_(std::move(owner)),
        model_(model),
        ops_(std::move(ops)),
        overrides_(std::move(overrides)) {}

  /// The entry of operation `op`, or null.
  const Op* find(std::string_view op) const {
    auto it = std::find_if(ops_.begin(), ops_.end(), [op](const Op& o) { return o.name == op; });
    return it == ops_.end() ? nullptr : &*it;
  }
  /// The entry of `op`; std::logic_error when the table has none.
  const Op& at(std::string_view op) const {
    if (const Op* found = find(op)) return *found;
    throw std::logic_error(owner_ + ": model " + std::string(model_) + "'s operation " +
                           std::string(op) + " has no handler");
  }
  /// Calls the handler of `call`'s operation on `executor`.
  void run(E& executor, const ModelCall& call) const { (executor.*at(call.op).handler)(call); }

  /// Releases leftover `name` of `kind`: by the kind's override if it has one, else by the
  /// handler of its default release in `defaults`, called with `name` alone and ordinal 0.
  /// std::logic_error when the kind has neither.
  void release(E& executor, const DefaultReleases& defaults, std::string_view kind,
               const std::string& name) const {
    for (const Override& o : overrides_) {
      if (o.kind == kind) return (executor.*o.release)(name);
    }
    const DefaultRelease* byDefault = defaults.of(kind);
    if (byDefault == nullptr) {
      throw std::logic_error(owner_ + ": no release for kind " + std::string(kind) + " of model " +
                             std::string(model_) +
                             ": the model names no default release and the executor no override");
    }
    std::vector<ModelCall::Arg> args;
    args.reserve(byDefault->args.size());
    for (const DefaultRelease::Arg& a : byDefault->args)
      args.push_back(ModelCall::Arg{a.key, a.value, a.word});
    const std::string names[] = {name};
    run(executor, ModelCall{byDefault->op, names, args, 0});
  }

  /// The table as tableDisagreements compares it.
  TableShape shape() const {
    TableShape shape{model_, {}, {}};
    for (const Op& o : ops_)
      shape.operations.push_back(o.name);
    for (const Override& o : overrides_)
      shape.overrides.push_back(o.kind);
    return shape;
  }

 private:
  std::string owner_;
  std::string_view model_;
  std::vector<Op> ops_;
  std::vector<Override> overrides_;
};

/// Set once a call of the executor failed: from then on nothing but the destructor is called, and
/// the destructor must leave what the runtime holds to the process's exit (ModelExecutor.h).
class FailureLatch {
 public:
  /// Runs `call`; when it throws, the latch trips and the exception goes on.
  template <typename Call>
  decltype(auto) guard(Call&& call) {
    try {
      return std::forward<Call>(call)();
    } catch (...) {
      trip();
      throw;
    }
  }
  void trip() { tripped_ = true; }
  bool tripped() const { return tripped_; }

 private:
  std::atomic<bool> tripped_ = false;
};

/// What leaked() found, each finding a phrase; text() joins them with "; ", empty when none.
class LeakReport {
 public:
  void add(std::string finding) { findings_.push_back(std::move(finding)); }
  bool empty() const { return findings_.empty(); }
  std::string text() const;

 private:
  std::vector<std::string> findings_;
};

}  // namespace gpufuzz::kit
