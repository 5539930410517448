// RuntimeLibrary.h: loading a runtime's library at run time, once per process, as every real
// backend does (nothing links a driver, so every program starts where it is missing).
#pragma once

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>

#include "renderer/device/DeviceError.h"

namespace gpufuzz {

/// Sets `fn` to the symbol `name` of `library`, or leaves it null and appends the name to
/// `missing`, so that one message lists everything an old library lacks.
template <typename Fn>
void resolveSymbol(void* library, const char* name, Fn& fn, std::string& missing) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (fn != nullptr) return;
  if (!missing.empty()) missing += ", ";
  missing += name;
}

/// Loading either succeeds once (the table) or fails once (the message): nothing is retried, and
/// every caller sees the same answer.
template <typename Api>
struct RuntimeLoad {
  std::optional<Api> api;
  std::string failure;
};

/// `load()` run once per process; its table, or DeviceUnavailable with its failure every time.
/// Each call site passes its own lambda, so each runtime has its own once.
template <typename Api, typename Load>
const Api& loadOnce(Load load) {
  static std::once_flag once;
  static RuntimeLoad<Api> loaded;
  std::call_once(once, [&] { loaded = load(); });
  if (!loaded.api) throw DeviceUnavailable(loaded.failure);
  return *loaded.api;
}

}  // namespace gpufuzz
