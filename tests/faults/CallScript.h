// CallScript.h: drives a Device through a hand-written sequence of device calls ("create A",
// "alloc A x", "launch A fb vb tex", ...) and records the counter snapshot each call was offered,
// so tests can state lifecycles as tables.
#pragma once

#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "renderer/device/Device.h"
#include "tests/faults/FakeBackend.h"

namespace gpufuzz::test {

/// Remembers every call the seam offers, with its counters.
class RecordingInterceptor : public Interceptor {
 public:
  struct Entry {
    CallSite site;
    CounterSnapshot counters;
  };
  Alteration before(const CallSite& site, const CounterSnapshot& counters) override {
    entries.push_back(Entry{site, counters});
    return {};
  }
  std::vector<Entry> entries;
};

/// One device call per step, with contexts and buffers named by the script:
///   create C | destroy C | alloc C buf | free buf | upload C buf | download C buf | sync C
///   launch C framebuffer vertices [texture...]
class CallScript {
 public:
  CallScript() : device_(std::make_unique<FakeBackend>(log_)) { device_.addInterceptor(recorder_); }

  void run(std::string_view step) {
    std::istringstream in{std::string(step)};
    std::string verb;
    std::vector<std::string> args;
    in >> verb;
    for (std::string arg; in >> arg;) {
      args.push_back(arg);
    }
    std::vector<std::byte> bytes(64);
    if (verb == "create") {
      contexts_[args.at(0)] = device_.createContext();
    } else if (verb == "destroy") {
      device_.destroyContext(contexts_.at(args.at(0)));
    } else if (verb == "alloc") {
      buffers_[args.at(1)] = device_.allocBuffer(contexts_.at(args.at(0)), bytes.size());
    } else if (verb == "free") {
      device_.freeBuffer(buffers_.at(args.at(0)));
    } else if (verb == "upload") {
      device_.copyToDevice(contexts_.at(args.at(0)), buffers_.at(args.at(1)), bytes);
    } else if (verb == "download") {
      device_.copyToHost(contexts_.at(args.at(0)), buffers_.at(args.at(1)), bytes);
    } else if (verb == "sync") {
      device_.synchronize(contexts_.at(args.at(0)));
    } else if (verb == "launch") {
      RasterLaunch launch;
      launch.framebuffer = buffers_.at(args.at(1));
      launch.vertices = buffers_.at(args.at(2));
      for (std::size_t i = 3; i < args.size(); ++i) {
        launch.textures[launch.textureCount++] = buffers_.at(args[i]);
      }
      device_.launch(contexts_.at(args.at(0)), launch);
    } else {
      throw std::invalid_argument("unknown script step: " + std::string(step));
    }
  }

  ContextId context(const std::string& name) const { return contexts_.at(name); }
  BufferId buffer(const std::string& name) const { return buffers_.at(name); }
  Device& device() { return device_; }
  FakeBackend::Log& log() { return log_; }
  const std::vector<RecordingInterceptor::Entry>& entries() const { return recorder_->entries; }

 private:
  FakeBackend::Log log_;
  Device device_;
  std::shared_ptr<RecordingInterceptor> recorder_ = std::make_shared<RecordingInterceptor>();
  std::map<std::string, ContextId> contexts_;
  std::map<std::string, BufferId> buffers_;
};

}  // namespace gpufuzz::test
