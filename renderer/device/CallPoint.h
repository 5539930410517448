// CallPoint.h: the eight device calls every backend implements, named as fault plans name them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gpufuzz {

enum class CallPoint : uint8_t {
  CtxCreate,
  CtxDestroy,
  BufAlloc,
  BufFree,
  Launch,
  CopyToDevice,
  CopyToHost,
  Sync,
};

inline constexpr std::array<CallPoint, 8> kAllCallPoints = {
    CallPoint::CtxCreate, CallPoint::CtxDestroy,   CallPoint::BufAlloc,   CallPoint::BufFree,
    CallPoint::Launch,    CallPoint::CopyToDevice, CallPoint::CopyToHost, CallPoint::Sync,
};

/// The plan-language name: "ctx_create", "buf_free", ...
std::string_view callPointName(CallPoint point);
std::optional<CallPoint> parseCallPoint(std::string_view name);

}  // namespace gpufuzz
