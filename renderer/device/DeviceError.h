// DeviceError.h: a failed device call. The message names the call and the runtime's error, so a
// finding says which call failed and why (e.g. "cuMemFree: CUDA_ERROR_INVALID_VALUE").
#pragma once

#include <stdexcept>
#include <string>

#include "renderer/device/CallPoint.h"

namespace gpufuzz {

class DeviceError : public std::runtime_error {
 public:
  DeviceError(CallPoint point, std::string message)
      : std::runtime_error(std::move(message)), point_(point) {}
  CallPoint point() const { return point_; }

 private:
  CallPoint point_;
};

/// A call broke the API's rules, as the runtime's own checker (a validation layer) reported it: the
/// outcome `invalid`, not `error`. The message names the rule (a VUID) and the checker's words. The
/// backend throws it before the call could do what the checker predicts.
class InvalidUse : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

/// The requested backend cannot be used at all (no driver, no device). Not a finding: callers
/// report it as bad usage of the machine.
class DeviceUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gpufuzz
