// InputError.h: a malformed input (sequence file, fault plan, option) with its place. Its
// message reads "FILE:LINE:COLUMN: message", as compilers print, so editors can jump to it;
// every program turns it into exit status 2.
#pragma once

#include <stdexcept>
#include <string>

namespace gpufuzz {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int line, int column, const std::string& message)
      : std::runtime_error(file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                           message),
        file_(std::move(file)),
        line_(line),
        column_(column),
        message_(message) {}
  /// An input error with no place in a file (a bad option value, a missing file).
  explicit InputError(const std::string& message)
      : std::runtime_error(message), line_(0), column_(0), message_(message) {}

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  int column_;
  std::string message_;
};

}  // namespace gpufuzz
