// Json.h: the JSON the project writes and reads (findings, stats, reports, explanations), all
// through Boost.JSON: a builder of a boost::json::value with the one layout every file has, and
// parsing that says where the text came from. What is written is strict JSON (RFC 8259): every
// string and key valid UTF-8, its invalid bytes written as `\xNN` text (OutsideText.h).
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/Outcome.h"

namespace gpufuzz {

/// `text` as a JSON string literal, quotes included; bytes that are not UTF-8 become `\xNN`.
std::string jsonString(std::string_view text);

/// Builds one JSON value call by call (objects, arrays, keys, values), as the writers of the
/// project's files think of them, and prints it in the project's layout.
class JsonWriter {
 public:
  JsonWriter();
  ~JsonWriter();
  JsonWriter& beginObject();
  JsonWriter& endObject();
  JsonWriter& beginArray();
  JsonWriter& endArray();
  /// The key of the next value inside an object.
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(uint64_t number);
  JsonWriter& value(int64_t number);
  JsonWriter& value(uint32_t number) { return value(static_cast<uint64_t>(number)); }
  JsonWriter& value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& null();
  /// A value that is already JSON text.
  JsonWriter& raw(std::string_view json);
  /// A parsed value, written in this writer's layout.
  JsonWriter& value(const boost::json::value& parsed);
  /// The value printed, two spaces a level, with a final newline.
  std::string str() const;

 private:
  /// Places `v` where the next value goes; `opens`: it is a container that stays open.
  void put(boost::json::value v, bool opens = false);
  boost::json::value root_;
  std::vector<boost::json::value*> open_;  // the objects and arrays not yet ended, innermost last
  std::optional<std::string> key_;
  bool done_ = false;
};

/// The JSON value of an `at`: a number, "end", or null.
void writeAt(JsonWriter& j, const std::optional<At>& at);

/// Parses JSON text; InputError "WHERE: not JSON (...)" when it is malformed. Strings that are
/// not valid UTF-8 are taken as they are (files of older versions held them).
boost::json::value parseJson(std::string_view text, const std::string& where);

/// A JSON file read and parsed; InputError naming the file when it is unreadable or malformed.
boost::json::value readJsonFile(const std::string& path);

/// "2025-01-31T12:00:00Z": a UTC time as the JSON files write it (sortable as text).
std::string utcTimeText(int64_t unixSeconds);
/// Seconds since 1970 (UTC), now.
int64_t unixNow();

}  // namespace gpufuzz
