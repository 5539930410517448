// cmdlists-target: a target of a model that is not a renderer's (../common/cmdlists.model), on
// the C++ client library (clients/cpp/gpufuzz/target.hpp), over a simulated GPU command runtime.
// It needs no GPU.
//
// The runtime has queues, fences, command lists and images. A command list records draws into
// images; `submit` hands a snapshot of it to a queue, with a fence to signal and a wait-list of
// fences. As a real driver batches work, the queue runs what was submitted only when the host
// waits: on a fence (`fence_wait`), on the queue (`queue_wait_idle`) or by destroying it. Images
// are reference counted: a recorded draw and a submission in flight each hold the image, so
// destroying an image in use only drops the handle, and the memory goes with the last user.
//
// The planted bug (EXAMPLE_PLANTED_BUG=1, off by default): `image_destroy` of an image that a
// submission still in flight draws into waits for that submission to finish, without flushing
// the queue. Nothing runs the queue while the host waits there, so it waits forever: a hang at
// image_destroy, which the harness finds and shrinks to seven operations (README.md).
//
//   gpufuzz fuzz --model examples/targets/common/cmdlists.model --target build/bin/cmdlists-target
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gpufuzz/target.hpp"

namespace {

namespace gt = gpufuzz::target;

struct Submission;

struct Image {
  std::uint64_t bytes = 0;
  unsigned refs = 1;  // the handle; each recorded draw and each submission in flight add one
  std::vector<const Submission*>
      users;  // the submissions that draw into it (the runtime owns them)
};

struct Queue {
  std::vector<std::shared_ptr<Submission>> pending;  // in the order they were made
  bool destroyed = false;
};

struct Submission {
  std::size_t number = 0;
  std::shared_ptr<Queue> queue;
  std::vector<std::shared_ptr<Image>> draws;
  std::vector<std::shared_ptr<Submission>> waits;
  bool retired = false;
};

struct Fence {
  std::vector<std::shared_ptr<Submission>> submissions;  // signalled once these have retired
};

struct Command {
  std::shared_ptr<Image> image;  // null: a barrier
  std::uint64_t vertices = 0;
  std::string stage;
};

struct CommandList {
  std::shared_ptr<Queue> queue;  // the queue whose pool it was recorded from
  std::vector<Command> commands;
};

std::uint64_t bytesPerTexel(const std::string& format) {
  return format == "rgba16f" ? 8 : 4;
}

/// The simulated driver: one lock over everything, as a real one's submission lock.
class Runtime {
 public:
  explicit Runtime(bool plantedBug) : plantedBug_(plantedBug) {}

  std::shared_ptr<Image> imageCreate(std::uint64_t width, std::uint64_t height,
                                     const std::string& format) {
    const std::lock_guard<std::mutex> lock(mutex_);
    auto image = std::make_shared<Image>();
    image->bytes = width * height * bytesPerTexel(format);
    bytesInUse_ += image->bytes;
    return image;
  }

  void imageDestroy(const std::shared_ptr<Image>& image) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (plantedBug_) {
      // The planted bug: wait for the GPU to be done with the image instead of deferring the
      // free. The queue runs only when the host waits on it, so this never ends.
      for (const auto& s : image->users) {
        while (!s->retired)
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    unref(*image);
  }

  void recordDraw(CommandList& list, const std::shared_ptr<Image>& image, std::uint64_t vertices) {
    const std::lock_guard<std::mutex> lock(mutex_);
    image->refs++;
    list.commands.push_back({image, vertices, {}});
  }

  void recordBarrier(CommandList& list, const std::string& stage) {
    const std::lock_guard<std::mutex> lock(mutex_);
    list.commands.push_back({nullptr, 0, stage});
  }

  void reset(CommandList& list) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const Command& c : list.commands) {
      if (c.image) unref(*c.image);
    }
    list.commands.clear();
  }

  void submit(const CommandList& list, const std::shared_ptr<Queue>& queue, Fence& fence,
              const std::vector<Fence*>& waits) {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (queue->destroyed) throw gt::Failure("error", "submit: the queue was destroyed");
    auto s = std::make_shared<Submission>();
    s->number = submissions_.size();
    s->queue = queue;
    for (const Command& c : list.commands) {
      if (!c.image) continue;
      s->draws.push_back(c.image);
      c.image->refs++;
      c.image->users.push_back(s.get());
    }
    for (const Fence* w : waits) {
      for (const auto& before : w->submissions) {
        if (!before->retired) s->waits.push_back(before);
      }
    }
    submissions_.push_back(s);
    queue->pending.push_back(s);
    fence.submissions.push_back(s);
  }

  void waitFence(const Fence& fence) {
    const std::lock_guard<std::mutex> lock(mutex_);
    retire(fence.submissions);
  }

  void waitIdle(const Queue& queue) {
    const std::lock_guard<std::mutex> lock(mutex_);
    retire(queue.pending);
  }

  void destroyQueue(Queue& queue) {
    const std::lock_guard<std::mutex> lock(mutex_);
    retire(queue.pending);
    queue.destroyed = true;
  }

  std::uint64_t bytesInUse() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return bytesInUse_;
  }

 private:
  void unref(Image& image) {
    if (--image.refs == 0) bytesInUse_ -= image.bytes;
  }

  /// Runs `wanted` and all they need: the submissions of their wait-lists and those before them
  /// on their queues; every one of those was made earlier, so in the order made.
  void retire(const std::vector<std::shared_ptr<Submission>>& wanted) {
    std::set<std::size_t> need;
    std::vector<std::shared_ptr<Submission>> stack(wanted.begin(), wanted.end());
    while (!stack.empty()) {
      const std::shared_ptr<Submission> s = stack.back();
      stack.pop_back();
      if (s->retired || !need.insert(s->number).second) continue;
      stack.insert(stack.end(), s->waits.begin(), s->waits.end());
      for (const auto& p : s->queue->pending) {
        if (p->number < s->number) stack.push_back(p);
      }
    }
    for (const std::size_t number : need) {  // ascending
      Submission& s = *submissions_[number];
      for (const auto& image : s.draws) {
        if (image->refs == 0) {
          throw gt::Failure(
              "error", "queue: submission " + std::to_string(number) + " draws into a freed image");
        }
        unref(*image);
      }
      std::erase_if(s.queue->pending, [&s](const auto& p) { return p.get() == &s; });
      s.retired = true;
    }
  }

  const bool plantedBug_;
  mutable std::mutex mutex_;
  std::uint64_t bytesInUse_ = 0;
  std::vector<std::shared_ptr<Submission>> submissions_;
};

/// A name's object, or an error naming what the sequence used.
template <class T>
T& lookUp(std::map<std::string, T, std::less<>>& objects, const std::string& name) {
  const auto it = objects.find(name);
  if (it == objects.end()) throw gt::Failure("error", "no object named " + name);
  return it->second;
}

/// One handler per operation of cmdlists.model, registered by name.
class CmdListsTarget final : public gt::Target {
 public:
  explicit CmdListsTarget(bool plantedBug) : runtime_(plantedBug) {
    handle("queue_create", [this](const gt::Operation& op) {
      const std::lock_guard<std::mutex> lock(names_);
      queues_[op.name()] = std::make_shared<Queue>();
    });
    handle("queue_wait_idle",
           [this](const gt::Operation& op) { runtime_.waitIdle(*queue(op.name())); });
    handle("queue_destroy", [this](const gt::Operation& op) {
      runtime_.destroyQueue(*queue(op.name()));
      const std::lock_guard<std::mutex> lock(names_);
      queues_.erase(op.name());
    });
    handle("fence_create", [this](const gt::Operation& op) {
      const std::lock_guard<std::mutex> lock(names_);
      fences_[op.name()] = std::make_shared<Fence>();
    });
    handle("fence_wait",
           [this](const gt::Operation& op) { runtime_.waitFence(*fence(op.name())); });
    handle("fence_destroy", [this](const gt::Operation& op) {
      const std::lock_guard<std::mutex> lock(names_);
      fences_.erase(op.name());  // what was submitted with it still runs
    });
    handle("image_create", [this](const gt::Operation& op) {
      auto image = runtime_.imageCreate(op.arg("width"), op.arg("height"), op.word("format"));
      const std::lock_guard<std::mutex> lock(names_);
      images_[op.name()] = std::move(image);
    });
    handle("image_destroy", [this](const gt::Operation& op) {
      std::shared_ptr<Image> gone = image(op.name());
      {
        const std::lock_guard<std::mutex> lock(names_);
        images_.erase(op.name());
      }
      runtime_.imageDestroy(gone);
    });
    handle("list_create", [this](const gt::Operation& op) {
      auto list = std::make_shared<CommandList>();
      list->queue = queue(op.name(0));
      const std::lock_guard<std::mutex> lock(names_);
      lists_[op.introduced()] = std::move(list);
    });
    handle("list_draw", [this](const gt::Operation& op) {
      runtime_.recordDraw(*list(op.name(0)), image(op.name(1)), op.arg("vertices"));
    });
    handle("list_barrier", [this](const gt::Operation& op) {
      runtime_.recordBarrier(*list(op.name()), op.word("stage"));
    });
    handle("list_reset", [this](const gt::Operation& op) { runtime_.reset(*list(op.name())); });
    handle("list_destroy", [this](const gt::Operation& op) {
      runtime_.reset(*list(op.name()));
      const std::lock_guard<std::mutex> lock(names_);
      lists_.erase(op.name());
    });
    handle("submit", [this](const gt::Operation& op) {
      // Names: the list, the queue, the fence to signal, then the wait-list (op.list()).
      std::vector<std::shared_ptr<Fence>> waits;
      std::vector<Fence*> waitFences;
      for (const std::string& name : op.list()) {
        waits.push_back(fence(name));
        waitFences.push_back(waits.back().get());
      }
      runtime_.submit(*list(op.name(0)), queue(op.name(1)), *fence(op.name(2)), waitFences);
    });
  }

  std::optional<std::string> leaks() override {
    const std::uint64_t held = runtime_.bytesInUse();
    if (held == 0) return std::nullopt;
    return "the images still hold " + std::to_string(held) + " bytes";
  }

 private:
  // The names' objects; operations of different threads reach them at once.
  template <class T>
  std::shared_ptr<T> find(std::map<std::string, std::shared_ptr<T>, std::less<>>& objects,
                          const std::string& name) {
    const std::lock_guard<std::mutex> lock(names_);
    return lookUp(objects, name);
  }
  std::shared_ptr<Queue> queue(const std::string& name) { return find(queues_, name); }
  std::shared_ptr<Fence> fence(const std::string& name) { return find(fences_, name); }
  std::shared_ptr<CommandList> list(const std::string& name) { return find(lists_, name); }
  std::shared_ptr<Image> image(const std::string& name) { return find(images_, name); }

  Runtime runtime_;
  std::mutex names_;
  std::map<std::string, std::shared_ptr<Queue>, std::less<>> queues_;
  std::map<std::string, std::shared_ptr<Fence>, std::less<>> fences_;
  std::map<std::string, std::shared_ptr<CommandList>, std::less<>> lists_;
  std::map<std::string, std::shared_ptr<Image>, std::less<>> images_;
};

}  // namespace

int main(int argc, char** argv) {
  return gt::main(argc, argv, "cmdlists-target 1.0", [] {
    const char* bug = std::getenv("EXAMPLE_PLANTED_BUG");
    return std::make_unique<CmdListsTarget>(bug && *bug && std::string_view(bug) != "0");
  });
}
