// Json.h: the little JSON the reports need: escaped strings, a writer that keeps commas and
// nesting right, and reading back what was written (findings, stats) as Boost.JSON values.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace boost::json {
class value;
}

namespace gpufuzz {

/// `text` as a JSON string literal, quotes included.
std::string jsonString(std::string_view text);

class JsonWriter {
 public:
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
  std::string str() const { return out_.str() + "\n"; }

 private:
  void separate();
  std::ostringstream out_;
  bool first_ = true;
  bool afterKey_ = false;
  int depth_ = 0;
};

/// Parses JSON text; InputError "WHERE: not JSON (...)" when it is malformed.
boost::json::value parseJson(std::string_view text, const std::string& where);

/// A JSON file read and parsed; InputError naming the file when it is unreadable or malformed.
boost::json::value readJsonFile(const std::string& path);

/// "2025-01-31T12:00:00Z": a UTC time as the JSON files write it (sortable as text).
std::string utcTimeText(int64_t unixSeconds);
/// Seconds since 1970 (UTC), now.
int64_t unixNow();

}  // namespace gpufuzz
