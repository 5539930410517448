// DeviceSpreadTest.cpp: how children are spread over several GPUs (CUDA_VISIBLE_DEVICES per
// child): which devices are visible, and the least busy one is taken.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/search/Trial.h"

namespace gpufuzz {
namespace {

using Devices = std::vector<std::string>;

TEST(DeviceSpread, VisibleDevicesAreOrdinalsOrTheHarnessesOwnList) {
  EXPECT_EQ(DeviceSpread::visibleDevices(3, nullptr), (Devices{"0", "1", "2"}));
  EXPECT_EQ(DeviceSpread::visibleDevices(2, ""), (Devices{"0", "1"}));
  EXPECT_EQ(DeviceSpread::visibleDevices(2, "4,6"), (Devices{"4", "6"}));
  EXPECT_EQ(DeviceSpread::visibleDevices(2, "GPU-1a2b,GPU-3c4d"),
            (Devices{"GPU-1a2b", "GPU-3c4d"}));
  // The driver counts what it could open: entries past that are not devices.
  EXPECT_EQ(DeviceSpread::visibleDevices(1, "2,7"), (Devices{"2"}));
  EXPECT_TRUE(DeviceSpread::visibleDevices(0, nullptr).empty());
}

TEST(DeviceSpread, EachChildGoesToTheLeastBusyDevice) {
  DeviceSpread spread({"0", "1", "2"});
  const std::size_t a = spread.acquire(), b = spread.acquire(), c = spread.acquire();
  EXPECT_EQ((std::vector<std::size_t>{a, b, c}), (std::vector<std::size_t>{0, 1, 2}));
  spread.release(1);
  EXPECT_EQ(spread.acquire(), 1u);  // the only idle device
  EXPECT_EQ(spread.acquire(), 0u);  // all equally busy: the first
  spread.release(2);
  EXPECT_EQ(spread.acquire(), 2u);
  EXPECT_EQ(spread.device(2), "2");
}

TEST(DeviceSpread, ManyChildrenOnTwoDevicesStayBalanced) {
  DeviceSpread spread({"GPU-a", "GPU-b"});
  std::vector<unsigned> perDevice(2, 0);
  for (int i = 0; i < 8; ++i)
    ++perDevice[spread.acquire()];
  EXPECT_EQ(perDevice, (std::vector<unsigned>{4, 4}));
}

TEST(DeviceSpread, ACudaChildSeesItsDeviceFirstAndTheOthersAfter) {
  DeviceSpread spread({"4", "6", "7"});
  EXPECT_EQ(spread.variable(), "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(spread.value(0), "4,6,7");
  EXPECT_EQ(spread.value(1), "6,7,4");
  EXPECT_EQ(spread.value(2), "7,4,6");
}

TEST(DeviceSpread, OtherBackendsAreGivenTheirDevicesIndex) {
  DeviceSpread spread({"0", "1"}, "GPUFUZZ_DEVICE_INDEX");
  EXPECT_EQ(spread.variable(), "GPUFUZZ_DEVICE_INDEX");
  EXPECT_EQ(spread.value(1), "1");
}

TEST(DeviceSpread, CountsTheChildrenStartedOnEachDevice) {
  DeviceSpread spread({"0", "1"});
  EXPECT_EQ(spread.startedText(), "0: 0, 1: 0");
  for (int i = 0; i < 3; ++i)
    spread.release(spread.acquire());
  spread.acquire();
  spread.acquire();
  EXPECT_EQ(spread.startedText(), "0: 4, 1: 1");
}

}  // namespace
}  // namespace gpufuzz
