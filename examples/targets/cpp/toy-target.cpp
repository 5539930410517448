// toy-target: a target of the protocol (docs/target.md) in a few dozen lines, on the C++ client
// library (clients/cpp/gpufuzz/target.hpp). Its "renderer" keeps framebuffers in host memory and
// its draws in a queue that `sync` drains. With --bug it frees a framebuffer whose draws are still
// queued, and says so as a device error would: the lifecycle bug the harness must find, shrink
// (to create, draw, destroy) and explain.
//
//   gpufuzz fuzz --target "toy-target --bug" --ops renderer --runs 200
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpufuzz/target.hpp"

namespace {

namespace gt = gpufuzz::target;

struct Renderer {
  std::vector<std::uint32_t> pixels;
  unsigned queued = 0;  // draws not waited for
};

class ToyTarget final : public gt::Target {
 public:
  explicit ToyTarget(bool bug) : bug_(bug) {}

  // Runs in the process that runs the sequence (a fork, under a fork server): where a real
  // target opens its device. GPUFUZZ_TOY_PRINT_PARENT shows which process that is.
  void start(const gt::Sequence&) override {
    if (std::getenv("GPUFUZZ_TOY_PRINT_PARENT")) std::printf("parent %d\n", ::getppid());
  }

  void run(const gt::Operation& op) override {
    if (op.op == "create") {
      renderers_[op.name()].pixels.assign(op.arg("width", 64) * op.arg("height", 64), 0);
    } else if (op.op == "draw") {
      renderers_.at(op.name()).queued++;
    } else if (op.op == "sync" || op.op == "read_back") {
      renderers_.at(op.name()).queued = 0;
    } else if (op.op == "set_textures") {
      renderers_.at(op.name());
    } else if (op.op == "destroy") {
      Renderer& r = renderers_.at(op.name());
      // The shipped teardown waits for the queue first; the bug frees under queued draws.
      if (bug_ && r.queued > 0) {
        throw gt::Failure("error", "fb_free: framebuffer freed with " + std::to_string(r.queued) +
                                       " draw(s) still queued");
      }
      renderers_.erase(op.name());
    } else {
      throw gt::Unsupported();
    }
  }

 private:
  bool bug_;
  std::map<std::string, Renderer> renderers_;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const bool bug = args.size() > 1 && std::strcmp(args[1], "--bug") == 0;
  if (bug) args.erase(args.begin() + 1);
  return gt::main(static_cast<int>(args.size()), args.data(), "toy-target 1.0",
                  [bug] { return std::make_unique<ToyTarget>(bug); });
}
