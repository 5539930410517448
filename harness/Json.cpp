// Json.cpp: JSON output.
#include "harness/Json.h"

#include <cmath>
#include <cstdio>

namespace gpufuzz {

std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

void JsonWriter::separate() {
  if (afterKey_) {
    afterKey_ = false;
    return;
  }
  if (!first_) out_ << ',';
  if (depth_ > 0) out_ << '\n' << std::string(static_cast<std::size_t>(depth_) * 2, ' ');
  first_ = false;
}

JsonWriter& JsonWriter::beginObject() {
  separate();
  out_ << '{';
  ++depth_;
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  --depth_;
  if (!first_) out_ << '\n' << std::string(static_cast<std::size_t>(depth_) * 2, ' ');
  out_ << '}';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  separate();
  out_ << '[';
  ++depth_;
  first_ = true;
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  --depth_;
  if (!first_) out_ << '\n' << std::string(static_cast<std::size_t>(depth_) * 2, ' ');
  out_ << ']';
  first_ = false;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  out_ << jsonString(name) << ": ";
  afterKey_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  separate();
  out_ << jsonString(text);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t number) {
  separate();
  out_ << number;
  return *this;
}

JsonWriter& JsonWriter::value(int64_t number) {
  separate();
  out_ << number;
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  separate();
  if (!std::isfinite(number)) {
    out_ << "null";
    return *this;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", number);
  out_ << text;
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  separate();
  out_ << (flag ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  separate();
  out_ << json;
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ << "null";
  return *this;
}

}  // namespace gpufuzz
