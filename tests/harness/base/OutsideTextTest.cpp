// OutsideTextTest.cpp: the rule for text from outside (OutsideText.h) and the strict JSON
// writer (Json.h): whatever bytes come in, valid UTF-8 goes out, nothing lost silently.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "harness/base/Json.h"
#include "harness/base/OutsideText.h"

namespace gpufuzz {
namespace {

using namespace std::string_literals;

TEST(OutsideText, KeepsValidTextAsItIs) {
  const std::string text =
      "clFinish: CL_OUT_OF_RESOURCES \xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\n\tx\\y";
  EXPECT_EQ(outsideText(text), text);
  EXPECT_TRUE(isValidUtf8(text));
}

TEST(OutsideText, EscapesEveryInvalidByteVisibly) {
  EXPECT_EQ(outsideText("\x00\xff\xfe garbage \x07"s), "\\x00\\xff\\xfe garbage \\x07");
  // A sequence cut short, a lone continuation byte, overlong forms, a surrogate, above U+10FFFF.
  EXPECT_EQ(outsideText("a\xe2\x82"), "a\\xe2\\x82");
  EXPECT_EQ(outsideText("\x80"), "\\x80");
  EXPECT_EQ(outsideText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(outsideText("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");
  EXPECT_EQ(outsideText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(outsideText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  EXPECT_FALSE(isValidUtf8("\xed\xa0\x80"));
}

TEST(OutsideText, EscapesControlCharactersButNewlineAndTab) {
  EXPECT_EQ(outsideText("\x1b[31mred\r\n\tok\x7f"), "\\x1b[31mred\\x0d\n\tok\\x7f");
  EXPECT_EQ(outsideText("csi \xc2\x9b"), "csi \\u009b");  // C1, valid UTF-8 but a control
  EXPECT_EQ(outsideLine("one\ntwo\tthree"), "one\\x0atwo\tthree");
}

TEST(OutsideText, CutsLongLinesWithANoteOfWhatWasCut) {
  const std::string line(10000, 'a');
  const std::string cut = outsideText(line + "\nshort\n", 100);
  const std::size_t newline = cut.find('\n');
  ASSERT_NE(newline, std::string::npos);
  EXPECT_LE(newline, 100U);
  EXPECT_NE(cut.find("bytes cut]"), std::string::npos);
  EXPECT_EQ(cut.substr(newline), "\nshort\n");
  const std::string head = cut.substr(0, newline);
  const std::size_t kept = head.find(' ');
  EXPECT_EQ(head.substr(kept), " [... " + std::to_string(10000 - kept) + " bytes cut]");
  // Never inside a character: a line of euro signs cut anywhere stays valid.
  std::string euros;
  for (int i = 0; i < 100; ++i)
    euros += "\xe2\x82\xac";
  for (std::size_t limit = 64; limit < 120; ++limit)
    EXPECT_TRUE(isValidUtf8(outsideText(euros, limit))) << limit;
}

TEST(OutsideText, RandomBytesComeOutValidBoundedAndStable) {
  std::mt19937_64 random(31);
  for (int n = 0; n < 20000; ++n) {
    std::string bytes(random() % 300, '\0');
    for (char& c : bytes)
      c = static_cast<char>(random() % 4 == 0 ? 0x80 + random() % 0x80 : random() % 256);
    const std::string text = outsideText(bytes, 128);
    ASSERT_TRUE(isValidUtf8(text));
    ASSERT_EQ(outsideText(text, 128), text) << "not idempotent";
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      ASSERT_LE(end - start, 128U);
      start = end + 1;
    }
    for (const char c : text) {
      const auto u = static_cast<unsigned char>(c);
      ASSERT_TRUE(u >= 0x20 || c == '\n' || c == '\t') << "control character kept";
      ASSERT_NE(u, 0x7f);
    }
    // Nothing silently lost: without a cut, every byte is there or escaped.
    if (bytes.size() < 32) {
      ASSERT_GE(text.size(), bytes.size());
    }
  }
}

TEST(JsonWriter, WritesStrictJsonWhateverTheBytes) {
  const std::string hostile = "\x00\xff\xfe garbage \x07"s;
  JsonWriter j;
  j.beginObject();
  j.key("detail").value(hostile);
  j.key("k\xff").value("v");
  j.endObject();
  const std::string text = j.str();
  EXPECT_TRUE(isValidUtf8(text)) << text;
  const boost::json::value back = parseJson(text, "test");
  // Control characters are JSON's to escape (\u0000); only the invalid bytes are changed.
  EXPECT_EQ(std::string(back.at("detail").as_string()), "\0\\xff\\xfe garbage \x07"s);
  EXPECT_TRUE(back.as_object().contains("k\\xff"));
  EXPECT_EQ(jsonString("\xc3"), R"("\\xc3")");
}

}  // namespace
}  // namespace gpufuzz
