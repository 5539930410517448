// RunCancel.cpp: the token's watches, each called once, under the token's lock.
#include "harness/supervise/RunCancel.h"

#include <utility>

namespace gpufuzz {

void RunCancel::cancel() {
  const std::lock_guard lock(mutex_);
  if (cancelled_) return;
  cancelled_ = true;
  // Under the lock: a watch that ends meanwhile waits, so no kill outlives its run.
  for (auto& [id, kill] : kills_)
    kill();
  kills_.clear();
}

bool RunCancel::cancelled() const {
  const std::lock_guard lock(mutex_);
  return cancelled_;
}

RunCancel::Watch::Watch(RunCancel& token, Kill kill) : token_(token) {
  const std::lock_guard lock(token_.mutex_);
  id_ = token_.nextId_++;
  if (token_.cancelled_) {
    kill();
    return;
  }
  token_.kills_.emplace(id_, std::move(kill));
}

RunCancel::Watch::~Watch() {
  const std::lock_guard lock(token_.mutex_);
  token_.kills_.erase(id_);
}

}  // namespace gpufuzz
