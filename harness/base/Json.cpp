// Json.cpp: JSON built, printed and parsed with Boost.JSON (compiled here, header-only).
#include "harness/base/Json.h"

#include <boost/json/src.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/OutsideText.h"

namespace gpufuzz {

std::string jsonString(std::string_view text) {
  // Boost.JSON copies the bytes of a string as they are: text that is not UTF-8 would make the
  // file no JSON at all (RFC 8259, section 8.1).
  const std::string valid = validUtf8(text);
  return boost::json::serialize(boost::json::value(boost::json::string_view(valid)));
}

namespace {

/// The layout every file of the project has had: two spaces a level, one member or element a
/// line, `"key": value`, {} and [] when empty; numbers as Boost.JSON writes them but doubles
/// with 6 significant digits (rates and seconds, not measurements of record).
void printValue(std::string& out, const boost::json::value& v, std::size_t depth) {
  const auto newline = [&](std::size_t d) {
    out += '\n';
    out.append(d * 2, ' ');
  };
  switch (v.kind()) {
    case boost::json::kind::object: {
      const boost::json::object& o = v.get_object();
      out += '{';
      bool first = true;
      for (const auto& [k, member] : o) {
        if (!first) out += ',';
        first = false;
        newline(depth + 1);
        out += jsonString(std::string_view(k));
        out += ": ";
        printValue(out, member, depth + 1);
      }
      if (!o.empty()) newline(depth);
      out += '}';
      return;
    }
    case boost::json::kind::array: {
      const boost::json::array& a = v.get_array();
      out += '[';
      bool first = true;
      for (const boost::json::value& element : a) {
        if (!first) out += ',';
        first = false;
        newline(depth + 1);
        printValue(out, element, depth + 1);
      }
      if (!a.empty()) newline(depth);
      out += ']';
      return;
    }
    case boost::json::kind::double_: {
      const double number = v.get_double();
      if (!std::isfinite(number)) {
        out += "null";
        return;
      }
      char text[32];
      std::snprintf(text, sizeof text, "%.6g", number);
      out += text;
      return;
    }
    case boost::json::kind::string:
      out += jsonString(std::string_view(v.get_string()));
      return;
    default:
      out += boost::json::serialize(v);
  }
}

}  // namespace

JsonWriter::JsonWriter() = default;
JsonWriter::~JsonWriter() = default;

void JsonWriter::put(boost::json::value v, bool opens) {
  if (open_.empty()) {
    if (done_) throw std::logic_error("JsonWriter: a second top-level value");
    root_ = std::move(v);
    done_ = true;
    if (opens) open_.push_back(&root_);
    return;
  }
  boost::json::value& parent = *open_.back();
  boost::json::value* placed = nullptr;
  if (parent.is_object()) {
    if (!key_) throw std::logic_error("JsonWriter: a value inside an object needs a key");
    placed = &(parent.get_object()[*key_] = std::move(v));
    key_.reset();
  } else {
    placed = &parent.get_array().emplace_back(std::move(v));
  }
  if (opens) open_.push_back(placed);
}

JsonWriter& JsonWriter::beginObject() {
  put(boost::json::object(), true);
  return *this;
}

JsonWriter& JsonWriter::endObject() {
  if (open_.empty() || !open_.back()->is_object()) throw std::logic_error("JsonWriter: no object");
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::beginArray() {
  put(boost::json::array(), true);
  return *this;
}

JsonWriter& JsonWriter::endArray() {
  if (open_.empty() || !open_.back()->is_array()) throw std::logic_error("JsonWriter: no array");
  open_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  key_ = std::string(name);
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  put(boost::json::string(text));
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t number) {
  put(number);
  return *this;
}

JsonWriter& JsonWriter::value(int64_t number) {
  put(number);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  put(std::isfinite(number) ? boost::json::value(number) : boost::json::value(nullptr));
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  put(flag);
  return *this;
}

JsonWriter& JsonWriter::raw(std::string_view json) {
  put(parseJson(json, "JsonWriter::raw"));
  return *this;
}

JsonWriter& JsonWriter::null() {
  put(nullptr);
  return *this;
}

JsonWriter& JsonWriter::value(const boost::json::value& parsed) {
  put(parsed);
  return *this;
}

std::string JsonWriter::str() const {
  std::string out;
  printValue(out, root_, 0);
  return out + "\n";
}

void writeAt(JsonWriter& j, const std::optional<At>& at) {
  if (!at) {
    j.null();
  } else if (at->isEnd()) {
    j.value("end");
  } else {
    j.value(at->ordinal);
  }
}

boost::json::value parseJson(std::string_view text, const std::string& where) {
  boost::system::error_code ec;
  // Files written before every string was made valid UTF-8 are still read (a finding of an old
  // shard is not lost to merge); whatever is written from them is valid again.
  boost::json::parse_options options;
  options.allow_invalid_utf8 = true;
  boost::json::value v = boost::json::parse(text, ec, {}, options);
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
