// CallFailure.h: a device call made to fail on purpose (docs/failures.md). The harness arms one
// failure on a thread for one operation; the Device seam counts the calls that can fail that way
// and fails the N-th before it reaches the backend, with the error the backend's runtime would
// return. Releases (a context's destroy, a buffer's free) are never failed: a release that never
// reaches the runtime would leak by construction.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "renderer/device/CallPoint.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

/// What the failing call says ran out or went away.
enum class FailureKind : uint8_t {
  DeviceMemory,  // device memory exhausted
  HostMemory,    // host memory exhausted inside the runtime
  DeviceLost,    // the device or context is lost
};

inline constexpr std::array<FailureKind, 3> kFailureKinds = {
    FailureKind::DeviceMemory, FailureKind::HostMemory, FailureKind::DeviceLost};

/// "out of device memory", "out of host memory", "device lost": for people.
std::string_view failureKindText(FailureKind kind);

/// Whether a call at `point` can fail with `kind`: device memory runs out only where memory is
/// made (a context, a buffer); host memory and the device can fail any call but a release.
bool canFailWith(CallPoint point, FailureKind kind);

/// The N-th call on this thread that can fail with `kind` fails.
struct CallFailure {
  FailureKind kind = FailureKind::DeviceMemory;
  uint32_t nth = 1;
};

/// This process's device memory is bounded (--device-memory): from now on a call that runs out
/// for real ends its operation as the failure it is, `fail ... real` (docs/failures.md).
void setMemoryBounded(bool bounded);
/// Whether `message`, a DeviceError's, is a call that ran out for real: it names a runtime's
/// out-of-device-memory error ("CUDA_ERROR_OUT_OF_MEMORY", "SIM_OUT_OF_MEMORY", ...), and either
/// the memory is bounded or the operation's model declares `oom` (`declaresOom`). So a sequence
/// that asks more than the device holds is no finding. CL_OUT_OF_RESOURCES counts only under a
/// bound.
bool ranOutForReal(std::string_view message, bool declaresOom = false);
/// The detail of the `fail` event of such a call: kRealFailurePrefix, then its error.
inline constexpr std::string_view kRealFailurePrefix = "real: ";
std::string realFailureDetail(std::string_view message);

/// A call the seam failed on purpose: the operation's failure as its mark asked.
class InjectedFailure : public DeviceError {
 public:
  InjectedFailure(CallPoint point, FailureKind kind, std::string message)
      : DeviceError(point, std::move(message)), kind_(kind) {}
  FailureKind kind() const { return kind_; }

 private:
  FailureKind kind_;
};

}  // namespace gpufuzz
