// MemoryShadowTest.cpp: the shadow of the `opencl` model's memory objects as extents, and the
// windows a check of a large object reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "renderer/opencl/MemoryShadow.h"

namespace gpufuzz {
namespace {

using Kind = Generated::Kind;

/// The bytes `what` generates at [from, from + n).
std::vector<std::byte> bytesOf(const Generated& what, uint64_t from, uint64_t n) {
  std::vector<std::byte> bytes;
  for (uint64_t place = from; place < from + n; ++place)
    bytes.push_back(what.at(place));
  return bytes;
}

TEST(MemoryShadow, GeneratedBytesFollowTheirOrigin) {
  const Generated pattern{Kind::Pattern, 0x04030201, 8};
  EXPECT_EQ(bytesOf(pattern, 8, 6),
            (std::vector<std::byte>{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4},
                                    std::byte{1}, std::byte{2}}));
  const Generated seeded{Kind::Seeded, 3, 0};
  EXPECT_EQ(seeded.at(0), std::byte{(3 * 131 + 1) & 0xff});
  EXPECT_EQ(seeded.at(2), std::byte{(3 * 131 + 14 + 1) & 0xff});
  const Generated kernel{Kind::Kernel, 5, 0};
  const uint32_t word = patternWord(1, 5);
  EXPECT_EQ(kernel.at(5), std::byte{static_cast<unsigned char>((word >> 8) & 0xff)});
}

TEST(MemoryShadow, UnwrittenBytesMatchAnythingAndWrittenOnesMustMatch) {
  MemoryShadow shadow(64);
  const std::vector<std::byte> zeros(64);
  EXPECT_FALSE(shadow.firstDifference(0, zeros));
  const Generated fill{Kind::Pattern, 0xffffffff, 16};
  shadow.assign(16, 16, fill);
  EXPECT_EQ(shadow.extents(), 1U);
  const auto difference = shadow.firstDifference(0, zeros);
  ASSERT_TRUE(difference);
  EXPECT_EQ(difference->place, 16U);
  EXPECT_EQ(difference->expected, std::byte{0xff});
  EXPECT_FALSE(shadow.firstDifference(16, bytesOf(fill, 16, 16)));
  EXPECT_FALSE(shadow.firstDifference(40, std::vector<std::byte>(24)));
}

TEST(MemoryShadow, ALaterWriteCutsTheExtentsItCovers) {
  MemoryShadow shadow(100);
  const Generated first{Kind::Seeded, 1, 0};
  const Generated second{Kind::Pattern, 0x11223344, 30};
  shadow.assign(0, 100, first);
  shadow.assign(30, 20, second);
  EXPECT_EQ(shadow.extents(), 3U);
  std::vector<std::byte> expected = bytesOf(first, 0, 100);
  const std::vector<std::byte> middle = bytesOf(second, 30, 20);
  std::copy(middle.begin(), middle.end(), expected.begin() + 30);
  EXPECT_FALSE(shadow.firstDifference(0, expected));
  expected[49] ^= std::byte{1};
  const auto difference = shadow.firstDifference(0, expected);
  ASSERT_TRUE(difference);
  EXPECT_EQ(difference->place, 49U);
  shadow.assign(0, 100, first);
  EXPECT_EQ(shadow.extents(), 1U);
}

TEST(MemoryShadow, ACopyMovesExtentsWithTheirOriginAndLeavesUnknownBytesUnknown) {
  MemoryShadow source(64);
  const Generated fill{Kind::Pattern, 0xa1b2c3d4, 8};
  source.assign(8, 16, fill);
  MemoryShadow target(64);
  target.assign(0, 64, Generated{Kind::Seeded, 7, 0});
  target.copyFrom(source, 4, 36, 24);  // [4, 28) of the source lands at [36, 60)
  // The copied fill: the source's bytes 8..23 at 40..55.
  EXPECT_FALSE(target.firstDifference(40, bytesOf(fill, 8, 16)));
  // Bytes the source never had are unknown in the target now, whatever it held before.
  EXPECT_FALSE(target.firstDifference(36, std::vector<std::byte>(4)));
  EXPECT_FALSE(target.firstDifference(56, std::vector<std::byte>(4)));
  // Past the copy the target keeps its own bytes.
  const auto difference = target.firstDifference(60, std::vector<std::byte>(4, std::byte{0xee}));
  ASSERT_TRUE(difference);
  EXPECT_EQ(difference->place, 60U);
}

TEST(MemoryShadow, ACopyWithinOneMemoryReadsBeforeItWrites) {
  MemoryShadow shadow(32);
  const Generated seeded{Kind::Seeded, 2, 0};
  shadow.assign(0, 16, seeded);
  shadow.copyFrom(shadow, 0, 8, 16);
  EXPECT_FALSE(shadow.firstDifference(8, bytesOf(seeded, 0, 16)));
  EXPECT_FALSE(shadow.firstDifference(0, bytesOf(seeded, 0, 8)));
}

TEST(MemoryShadow, AnObjectUpTo64MiBIsCheckedWhole) {
  const std::vector<Window> windows = checkedWindows(kWholeObjectBytes);
  ASSERT_EQ(windows.size(), 1U);
  EXPECT_EQ(windows[0].offset, 0U);
  EXPECT_EQ(windows[0].bytes, kWholeObjectBytes);
}

TEST(MemoryShadow, ALargeObjectIsCheckedAtItsEndsAndAcrossEveryPowerOfTwo) {
  const uint64_t bytes = uint64_t{20} << 30;  // 20 GiB, past the 32-bit word count at 16 GiB
  const std::vector<Window> windows = checkedWindows(bytes);
  ASSERT_GE(windows.size(), 3U);
  EXPECT_EQ(windows.front().offset, 0U);
  EXPECT_EQ(windows.back().offset + windows.back().bytes, bytes);
  for (size_t i = 1; i < windows.size(); ++i) {
    EXPECT_GE(windows[i].offset, windows[i - 1].offset + windows[i - 1].bytes);
    EXPECT_LE(windows[i].bytes, kWindowBytes);
  }
  for (const uint64_t line :
       {uint64_t{1} << 20, uint64_t{1} << 31, uint64_t{1} << 32, uint64_t{1} << 34}) {
    bool across = false;
    for (const Window& window : windows)
      across = across || (window.offset < line && window.offset + window.bytes > line);
    EXPECT_TRUE(across) << "no window across " << line;
  }
}

}  // namespace
}  // namespace gpufuzz
