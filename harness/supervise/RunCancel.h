// RunCancel.h: runs a caller no longer needs, stopped while they run. A shrink cancels the
// candidates of a round after the first that reproduces: only that one can be taken, and each
// of the others would hold a child slot and its GPU until it ends (docs/campaigns.md, Shrinking).
//
// Contract:
// - cancel() kills the child of every run that watches this token, and of every run that starts
//   watching it later, at once. Such a run reports Supervised::cancelled, a harness error: its
//   outcome says nothing about the system under test.
// - A run checks cancelled() before it starts a child, and starts none once cancelled.
// - Thread-safe: cancel() may be called from any thread while the runs go on in others.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace gpufuzz {

class RunCancel {
 public:
  using Kill = std::function<void()>;

  RunCancel() = default;
  RunCancel(const RunCancel&) = delete;
  RunCancel& operator=(const RunCancel&) = delete;

  /// Cancels every run watching now or later; once is enough, a second call does nothing.
  void cancel();
  bool cancelled() const;

  /// A child's watch of the token: `kill` is called once, on cancel(), or at once when it
  /// already was. After the watch is gone, `kill` is never called again.
  class Watch {
   public:
    Watch(RunCancel& token, Kill kill);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    RunCancel& token_;
    uint64_t id_;
  };

 private:
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  uint64_t nextId_ = 0;
  std::map<uint64_t, Kill> kills_;  // the watching runs' kills, until each watch ends
};

}  // namespace gpufuzz
