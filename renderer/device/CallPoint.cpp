// CallPoint.cpp: names of the device calls.
#include "renderer/device/CallPoint.h"

namespace gpufuzz {

namespace {
constexpr std::array<std::string_view, 8> kNames = {
    "ctx_create", "ctx_destroy",    "buf_alloc",    "buf_free",
    "launch",     "copy_to_device", "copy_to_host", "sync",
};
}  // namespace

std::string_view callPointName(CallPoint point) {
  return kNames[static_cast<std::size_t>(point)];
}

std::optional<CallPoint> parseCallPoint(std::string_view name) {
  for (CallPoint p : kAllCallPoints) {
    if (callPointName(p) == name) return p;
  }
  return std::nullopt;
}

}  // namespace gpufuzz
