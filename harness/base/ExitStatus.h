// ExitStatus.h: the one place where errors become exit statuses (docs/cli.md, Exit statuses),
// for gpufuzz and gpufuzz-runner alike. An exception escaping a program's work is printed on
// stderr as one line "PROGRAM: error: MESSAGE" and ends it with:
//   - 2 for InputError (bad usage or input) and DeviceUnavailable (no usable runtime or device);
//   - 3 for WriteError (a file the harness could not keep; the message names it);
//   - 3 for any other std::exception, printed as "PROGRAM: internal error: MESSAGE".
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace gpufuzz {

/// Exit statuses of the contract beyond 0 and 1.
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitHarnessFailed = 3;

/// Runs `work` and returns its exit status, or the status of the exception it throws (above).
int exitStatusOf(std::string_view program, const std::function<int()>& work);

/// "PROGRAM: error: ", how an error line of exitStatusOf begins.
std::string errorLinePrefix(std::string_view program);

}  // namespace gpufuzz
