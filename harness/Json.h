// Json.h: the little JSON the reports need: escaped strings, and a writer that keeps commas and
// nesting right.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

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
  std::string str() const { return out_.str() + "\n"; }

 private:
  void separate();
  std::ostringstream out_;
  bool first_ = true;
  bool afterKey_ = false;
  int depth_ = 0;
};

}  // namespace gpufuzz
