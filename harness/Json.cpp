// Json.cpp: JSON output, and input through Boost.JSON (compiled here, header-only).
#include "harness/Json.h"

#include <boost/json/src.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "harness/AtomicFile.h"
#include "renderer/InputError.h"

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

JsonWriter& JsonWriter::value(const boost::json::value& parsed) {
  switch (parsed.kind()) {
    case boost::json::kind::object:
      beginObject();
      for (const auto& [k, v] : parsed.get_object())
        key(std::string_view(k)).value(v);
      return endObject();
    case boost::json::kind::array:
      beginArray();
      for (const auto& v : parsed.get_array())
        value(v);
      return endArray();
    case boost::json::kind::string:
      return value(std::string_view(parsed.get_string()));
    case boost::json::kind::uint64:
      return value(parsed.get_uint64());
    case boost::json::kind::int64:
      return value(parsed.get_int64());
    case boost::json::kind::double_:
      return value(parsed.get_double());
    case boost::json::kind::bool_:
      return value(parsed.get_bool());
    case boost::json::kind::null:
      break;
  }
  return null();
}

boost::json::value parseJson(std::string_view text, const std::string& where) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) throw InputError(where + ": not JSON (" + ec.message() + ")");
  return v;
}

boost::json::value readJsonFile(const std::string& path) {
  std::string text;
  try {
    text = readFile(path);
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  }
  return parseJson(text, path);
}

std::string utcTimeText(int64_t unixSeconds) {
  const std::time_t t = static_cast<std::time_t>(unixSeconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

int64_t unixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace gpufuzz
