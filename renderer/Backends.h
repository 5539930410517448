// Backends.h: the backends of this build, by name, and the factory that makes one. `auto` means
// cuda when a CUDA device is usable in this process, else sim.
//
// Each backend is one entry of the registry (Backends.cpp): its name (docs/sequences.md), whether
// this build contains it, whether a process that uses it may still fork children, and its factory.
// A backend that is not built, or whose runtime is missing, throws DeviceUnavailable with the
// reason and the next step; an unknown name is an InputError.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "renderer/device/Backend.h"
#include "renderer/device/ModelExecutor.h"

namespace gpufuzz {

/// What selects and configures a backend beyond its name (docs/cli.md).
struct BackendOptions {
  /// --device TEXT: the first device whose platform name, platform vendor or device name
  /// contains TEXT, ignoring case; for CUDA an ordinal. Empty: the backend's default.
  std::string device;
  /// --validation on|off (vulkan); unset: on where the layer is installed.
  std::optional<bool> validation;
  /// --device-memory BYTES: about BYTES of device memory left to the run (docs/failures.md).
  std::optional<uint64_t> deviceMemory;
  bool operator==(const BackendOptions&) const = default;
};

/// How the harness runs a backend: every property that differs between backends, so that no
/// code compares backend names (docs/backends.md). One profile per backend, built or not.
struct BackendProfile {
  /// Default children per device where the driver makes them wait for each other (each context
  /// a sequence makes is a driver context, made one at a time); 0: no cap, one per core.
  unsigned jobsPerDevice = 0;
  /// The cap holds only on devices whose description contains this, ignoring case (empty: all).
  std::string_view jobsOnlyOn;
  /// The cap holds only for children that run one sequence each (not with --persistent N > 1).
  bool jobsFreshOnly = false;
  /// How children are spread over several GPUs, the cap per GPU (harness/search/Trial.h):
  /// - CudaVisibleDevices: each child's CUDA_VISIBLE_DEVICES names its GPU first;
  /// - DeviceIndex: each child's GPUFUZZ_DEVICE_INDEX (renderer/device/DeviceIndex.h), where the
  ///   description names NVIDIA, whose GPUs the harness counts through the CUDA driver.
  enum class Spread { None, CudaVisibleDevices, DeviceIndex };
  Spread spreadOverGpus = Spread::None;
  /// compute-sanitizer checks its children (--sanitizer).
  bool sanitizer = false;
  /// The fault plan when neither --faults nor a file's `faults` directive names one.
  std::string_view defaultFaults = "none";
  /// It runs a sequence the same way every time: a threaded sequence's threads take turns by a
  /// schedule of (seed, try), and one thread needs one try; on every other backend timing decides.
  bool deterministic = false;
  /// Its runtime can report a lost device, so a mark may ask for `lost` (docs/failures.md); the
  /// backend's failureError says the same once it is loaded, which the harness never does.
  bool deviceLost = true;
  /// It can take its device's memory until about --device-memory bytes are left
  /// (Backend::leaveDeviceMemory); the harness refuses the option elsewhere, before any run.
  bool boundsDeviceMemory = false;
};

/// Which backends bound their device's memory (--device-memory), as messages name them.
inline constexpr std::string_view kBoundedBackends =
    "sim, cuda, cuda-async, and opencl and vulkan on a GPU";

/// The backend a corpus file's `expect` speaks of (others are `expect.NAME` where they differ):
/// always built, needs no device.
inline constexpr std::string_view kReferenceBackend = "sim";

struct BackendInfo {
  std::string_view name;
  /// How the harness runs it.
  BackendProfile profile;
  /// Compiled into this build (its runtime is still loaded at run time).
  bool built = false;
  /// A process that used this backend's runtime cannot safely fork children that use it too
  /// (OpenCL, Vulkan: docs/backends.md). The harness then checks usability in a child process.
  bool probeInChild = false;
  /// Makes the backend; throws DeviceUnavailable when its runtime or device is not usable.
  std::unique_ptr<Backend> (*make)(const BackendOptions& options) = nullptr;
  /// Why it is not built, and what to do about it (when !built).
  std::string_view notBuilt;
  /// Maps the runtime's libraries into the process without calling it (may be null), so that
  /// children forked afterwards start without loading them.
  void (*preload)() = nullptr;
  /// The runtime models (model/models/NAME.model, docs/models.md) the backend executes through
  /// its runtime's own API, besides the renderer's models. Listed whether built or not.
  std::span<const std::string_view> models;
  /// Makes the executor of one of `models`; throws DeviceUnavailable as `make` does.
  std::unique_ptr<ModelExecutor> (*makeExecutor)(std::string_view model,
                                                 const BackendOptions& options) = nullptr;
};

/// Every backend this build knows, built or not, in the contract's order.
std::span<const BackendInfo> backendRegistry();
/// The registry entry for `name`; InputError (listing the names) for an unknown one.
const BackendInfo& backendInfo(std::string_view name);
/// The profile of `name`; nullptr for a name outside the registry (a target's "target").
const BackendProfile* findBackendProfile(std::string_view name);
/// The backends `auto` tries, in order: the first usable in this process is the one.
std::span<const std::string_view> autoBackends();
/// "sim, cuda, ..." for messages.
std::string backendNamesText();

/// The preload of backend `name` when it is built and has one (else nothing): for a fork server,
/// before it forks a child that will use it.
void preloadRuntime(std::string_view name);

/// Whether `model` is a runtime model: one that some backend of the registry executes.
bool isRuntimeModel(std::string_view model);
/// Whether backend `backend` executes runtime model `model`.
bool backendRunsModel(std::string_view backend, std::string_view model);
/// The backend `auto` means for runtime model `model`: the first of the registry that executes
/// it; empty for any other model.
std::string_view backendForModel(std::string_view model);
/// "cuda, cuda-async" for messages: the backends that execute `model`.
std::string backendsOfModelText(std::string_view model);
/// The executor of runtime model `model` on `backend` ("auto": backendForModel). Throws
/// DeviceUnavailable when the backend is not built or its runtime is not usable, and
/// InputError when the backend does not execute the model.
std::unique_ptr<ModelExecutor> makeModelExecutor(std::string_view backend, std::string_view model,
                                                 const BackendOptions& options = {});

/// Whether this build contains the cuda backend (the driver is still loaded at run time).
bool cudaBackendBuilt();

/// CUDA devices this process can use (as CUDA_VISIBLE_DEVICES leaves them); 0 when the cuda
/// backend is not built or the driver is unusable. Initialises the driver.
int cudaDeviceCount();

/// A backend by name, or "auto". Throws DeviceUnavailable when it is asked for and cannot be
/// used, and InputError for an unknown name.
std::unique_ptr<Backend> makeBackend(std::string_view name, const BackendOptions& options = {});

}  // namespace gpufuzz
