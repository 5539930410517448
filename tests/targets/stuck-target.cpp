// stuck-target: a target of the protocol, on the C++ client library, whose `draw` never returns,
// for the stacks a stuck target gives of itself (TargetStacksTest.cpp). `stuck-target spin FILE`
// spins in stuck_in_submit; `stuck-target hang FILE` waits there for a condition no one signals.
// Every other operation of the built-in model passes.
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "gpufuzz/target.hpp"

namespace gt = gpufuzz::target;

namespace {

std::atomic<bool> released{false};  // never set: the submit is stuck for good

}  // namespace

/// Out of line and outside any namespace, so that its frame is named "stuck_in_submit".
[[gnu::noinline]] void stuck_in_submit(bool spin) {
  if (spin) {
    while (!released.load(std::memory_order_relaxed)) {
    }
    return;
  }
  std::mutex mutex;
  std::condition_variable never;
  std::unique_lock<std::mutex> lock(mutex);
  never.wait(lock, [] { return released.load(); });
}

namespace {

class StuckTarget final : public gt::Target {
 public:
  explicit StuckTarget(bool spin) : spin_(spin) {}
  void run(const gt::Operation& op) override {
    if (op.op == "draw") stuck_in_submit(spin_);
  }

 private:
  bool spin_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const bool spin = args.size() > 1 && std::strcmp(args[1], "spin") == 0;
  if (args.size() > 1 && (spin || std::strcmp(args[1], "hang") == 0)) args.erase(args.begin() + 1);
  return gt::main(static_cast<int>(args.size()), args.data(), "stuck-target 1.0",
                  [spin] { return std::make_unique<StuckTarget>(spin); });
}
