// ModelExecutor.h: what a backend implements to run a runtime lifecycle model (docs/models.md)
// through its runtime's own API: `opencl` on the opencl backend, `vulkan` on vulkan, `cuda-driver`
// on cuda and cuda-async.
//
// The contract:
// - The executor owns every object a sequence makes, by the sequence's names. It knows its model's
//   slots, since the model file ships beside it (model/models/NAME.model).
// - run() executes one operation. A failed runtime call throws DeviceError naming the call and the
//   runtime's error. A rule broken, as the runtime's own checker reports it (a validation layer),
//   throws InvalidUse naming the rule, unless the executor predicted that rule and the checker
//   refused the call: then nothing happened on the device and the run goes on (the vulkan
//   executor's "refused as predicted"). Bytes read back that differ from what the operations wrote
//   throw DataMismatch. Each is thrown before the call could do what the checker predicts.
// - release() releases one leftover after the last operation, kind by kind in the model's release
//   order, each kind in creation order (the runner computes the order). Before a sequence's first
//   operation the runner names each kind's default release (setDefaultReleases), which the model
//   derives, so an executor need not copy it (ExecutorKit.h).
// - leaked() is asked once everything is released: what the runtime still holds, or empty.
// - Never two calls at once on one name. Unless threadSafe(), the runner holds a seam::StateLock
//   around each call, which the executor's runtime calls let go (RuntimeSeam.h).
// - After a failure nothing more is called but the destructor, which must not block on the
//   runtime: leaving objects to the process's exit is fine.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpufuzz {

/// One operation of a runtime model, in the model's words.
struct ModelCall {
  struct Arg {
    std::string_view key;
    /// The value; for a word argument (`{a|b}`), the word's index.
    uint64_t value = 0;
    /// The word of a word argument; empty for a number.
    std::string_view word;
  };
  /// The operation's name in its model ("buf_create").
  std::string_view op;
  /// In written order: used slots, the list slot's names, introduced names.
  std::span<const std::string> names;
  /// Every argument of the declaration, defaults filled in, in declaration order.
  std::span<const Arg> args;
  /// The operation's ordinal in its sequence, 1-based; 0 for a release at the end.
  uint32_t ordinal = 0;

  /// The value of `key`; std::logic_error when the operation has no such argument.
  uint64_t arg(std::string_view key) const {
    for (const Arg& a : args) {
      if (a.key == key) return a.value;
    }
    throw std::logic_error("operation " + std::string(op) + " has no argument " + std::string(key));
  }
  /// The word of word argument `key`; std::logic_error when there is none.
  std::string_view word(std::string_view key) const {
    for (const Arg& a : args) {
      if (a.key == key && !a.word.empty()) return a.word;
    }
    throw std::logic_error("operation " + std::string(op) + " has no word argument " +
                           std::string(key));
  }
};

/// The operation that releases a leftover of `kind` when the model gives one: the kind's only
/// ending operation, taking no other name (docs/models.md). Its arguments are at their defaults.
struct DefaultRelease {
  struct Arg {
    std::string key;
    uint64_t value = 0;
    /// The word of a word argument; empty for a number.
    std::string word;
  };
  std::string kind;
  std::string op;
  /// In declaration order, as ModelCall::args.
  std::vector<Arg> args;
};

/// Bytes read back differ from what the model's operations wrote: the outcome `mismatch`. The
/// message says where and how ("buf b1 byte 4096 is 0x00, the operations wrote 0x5a").
class DataMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;
  /// What runs underneath: platform, device and driver version ("pocl 3.1 / cpu / OpenCL 3.0").
  virtual std::string description() const = 0;
  /// Whether calls may come from several threads at once, on different names.
  virtual bool threadSafe() const { return false; }
  /// Runs one operation of the model.
  virtual void run(const ModelCall& call) = 0;
  /// Releases leftover `name`, of kind `kind`, after the sequence's last operation.
  virtual void release(std::string_view kind, const std::string& name) = 0;
  /// The default release of each kind of the model that has one, told before each sequence's
  /// first operation.
  virtual void setDefaultReleases(std::span<const DefaultRelease> releases) { (void)releases; }
  /// Once everything is released: what the runtime still holds, described; empty when nothing.
  virtual std::string leaked() { return {}; }
  /// As Backend::leaveDeviceMemory: about `bytes` left to the run, or false where the runtime's
  /// memory cannot be bounded.
  virtual bool leaveDeviceMemory(uint64_t bytes) {
    (void)bytes;
    return false;
  }
};

}  // namespace gpufuzz
