// PendingWork.h: what a wait left unfinished, as every backend reports it to the seam, which
// turns it into the error "<waitCall> returned while <pending>".
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpufuzz {

struct PendingWork {
  std::string waitCall;  // "clFinish", "cuStreamSynchronize"
  std::string pending;   // "1 command enqueued before it was CL_QUEUED (clEnqueueWriteBuffer)"
};

/// One command a wait should have completed, in the runtime's words.
struct PendingCommand {
  std::string call;   // what enqueued it: "clEnqueueWriteBuffer", "upload"
  std::string state;  // where it stands: "CL_QUEUED", "still queued"
};

/// "1 command enqueued before it was CL_QUEUED (clEnqueueWriteBuffer)", or for several
/// "3 commands enqueued before it were not complete: clEnqueueWriteBuffer CL_QUEUED, ...";
/// at most 8 are listed. `commands` must not be empty.
std::string describePendingCommands(const std::vector<PendingCommand>& commands);

/// What the wait in each context's release left pending, kept from the release until the seam
/// asks (Backend::pendingAfterWait), since the context is gone by then.
class ReleasedWaits {
 public:
  void record(uint64_t ctx, const std::optional<PendingWork>& pending) {
    if (pending) pending_[ctx] = *pending;
  }
  /// The pending work recorded for `ctx`, once.
  std::optional<PendingWork> take(uint64_t ctx) {
    auto it = pending_.find(ctx);
    if (it == pending_.end()) return std::nullopt;
    PendingWork work = std::move(it->second);
    pending_.erase(it);
    return work;
  }

 private:
  std::map<uint64_t, PendingWork> pending_;
};

}  // namespace gpufuzz
