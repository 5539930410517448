// ExitStatus.cpp: exceptions to exit statuses.
#include "harness/base/ExitStatus.h"

#include <cstdio>
#include <exception>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {

std::string errorLinePrefix(std::string_view program) {
  return std::string(program) + ": error: ";
}

int exitStatusOf(std::string_view program, const std::function<int()>& work) {
  const auto fail = [&](const std::string& prefix, const char* what, int status) {
    std::fprintf(stderr, "%s%s\n", prefix.c_str(), what);
    std::fflush(stderr);
    return status;
  };
  try {
    return work();
  } catch (const InputError& e) {
    return fail(errorLinePrefix(program), e.what(), kExitBadInput);
  } catch (const DeviceUnavailable& e) {
    return fail(errorLinePrefix(program), e.what(), kExitBadInput);
  } catch (const WriteError& e) {
    // A full disk or a file-size limit: the harness failed to keep its files.
    return fail(errorLinePrefix(program), e.what(), kExitHarnessFailed);
  } catch (const std::exception& e) {
    return fail(std::string(program) + ": internal error: ", e.what(), kExitHarnessFailed);
  }
}

}  // namespace gpufuzz
