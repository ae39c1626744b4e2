// Tests CountVisibleDevices against the rules PyTorch copies from the driver
// (torch/cuda/__init__.py: _parse_visible_devices, _device_count_nvml).
#include "reference/runtime/visible_devices.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

const std::vector<std::string> kTwo = {"GPU-5eed0000-0000-4000-8000-000000000000",
                                       "GPU-5eed0000-0000-4000-8000-000000000001"};

TEST(CountVisibleDevicesTest, OrdinalsAreCountedUpToTheFirstThatNamesNoDevice) {
  EXPECT_EQ(CountVisibleDevices("0", kTwo), 1);
  EXPECT_EQ(CountVisibleDevices("1,0", kTwo), 2);
  EXPECT_EQ(CountVisibleDevices("", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("0,2,1", kTwo), 1);  // 2 is past the count
  EXPECT_EQ(CountVisibleDevices("0,x,1", kTwo), 1);  // no digits
  EXPECT_EQ(CountVisibleDevices("-1,0", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("99999999999999999999", kTwo), 0);
}

TEST(CountVisibleDevicesTest, AnOrdinalIsReadLikeStrtoul) {
  // "CUDA_VISIBLE_DEVICES uses something like strtoul which makes
  // `1gpu2,2ampere` is equivalent to `1,2`" (PyTorch).
  EXPECT_EQ(CountVisibleDevices("1gpu2,0ampere", kTwo), 2);
  EXPECT_EQ(CountVisibleDevices(" 1, 0", kTwo), 2);
  EXPECT_EQ(CountVisibleDevices("+0", kTwo), 1);
  EXPECT_EQ(CountVisibleDevices("-0,1", kTwo), 2);  // int("-0") is 0
  EXPECT_EQ(CountVisibleDevices("1,-1,0", kTwo), 1);
}

TEST(CountVisibleDevicesTest, ADeviceNamedTwiceHidesEveryDevice) {
  EXPECT_EQ(CountVisibleDevices("0,0", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("1,0,1", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("0,5,0", kTwo), 0);  // past the count, before the repeat
  EXPECT_EQ(CountVisibleDevices("0,x,0", kTwo), 1);  // the list ends at x, before the repeat
  EXPECT_EQ(CountVisibleDevices("0,1", {kTwo[0]}), 1);
}

// The driver fails initialization with 101 for a repeat, where a list that
// leaves nothing visible gives 100: ReadVisibleDevices says which.
TEST(CountVisibleDevicesTest, ARepeatIsToldApartFromAnEmptyList) {
  EXPECT_TRUE(ReadVisibleDevices("0,0", kTwo).names_a_device_twice);
  EXPECT_TRUE(ReadVisibleDevices("0,5,0", kTwo).names_a_device_twice);
  EXPECT_TRUE(ReadVisibleDevices(kTwo[1] + "," + kTwo[1], kTwo).names_a_device_twice);
  EXPECT_FALSE(ReadVisibleDevices("0,x,0", kTwo).names_a_device_twice);
  EXPECT_FALSE(ReadVisibleDevices("", kTwo).names_a_device_twice);
  EXPECT_FALSE(ReadVisibleDevices("5", kTwo).names_a_device_twice);
  EXPECT_EQ(ReadVisibleDevices("1,0", kTwo).count, 2);
  EXPECT_EQ(ReadVisibleDevices("0,0", kTwo).count, 0);
}

TEST(CountVisibleDevicesTest, UuidsNameTheOneDeviceTheyPrefix) {
  EXPECT_EQ(CountVisibleDevices(kTwo[1], kTwo), 1);
  EXPECT_EQ(CountVisibleDevices(kTwo[1] + "," + kTwo[0], kTwo), 2);
  EXPECT_EQ(CountVisibleDevices("GPU-5eed0000-0000-4000-8000-000000000001", kTwo), 1);
  EXPECT_EQ(CountVisibleDevices("GPU-5eed", kTwo), 0);  // ambiguous
  EXPECT_EQ(CountVisibleDevices("GPU-ffff", kTwo), 0);  // unknown
  EXPECT_EQ(CountVisibleDevices(kTwo[0] + ",GPU-ffff," + kTwo[1], kTwo), 1);
  EXPECT_EQ(CountVisibleDevices(kTwo[0] + ",1", kTwo), 1);  // a UUID list ends at an ordinal
  EXPECT_EQ(CountVisibleDevices("0," + kTwo[1], kTwo), 1);  // an ordinal list ends at a UUID
}

// A MIG instance's UUID ("MIG-..."; "MIG-GPU-.../gi/ci" before CUDA 11.1)
// names no device here: simcuda models no MIG. A list that starts with one
// is read as a list of ordinals, and it has no digits: every device is
// hidden. After ordinals or GPU UUIDs it ends the list like any entry that
// names no device. (PyTorch's _device_count_nvml gives up on a MIG list and
// asks CUDA; on a MIG-enabled GPU the driver shows the named instance.)
TEST(CountVisibleDevicesTest, AMigUuidNamesNoDevice) {
  const std::string mig = "MIG-5eed0000-0000-4000-8000-000000000000";
  EXPECT_EQ(CountVisibleDevices(mig, kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("MIG-GPU-5eed0000-0000-4000-8000-000000000000/0/0", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices(mig + ",0,1", kTwo), 0);
  EXPECT_EQ(CountVisibleDevices("1," + mig + ",0", kTwo), 1);
  EXPECT_EQ(CountVisibleDevices(kTwo[1] + "," + mig + "," + kTwo[0], kTwo), 1);
}

TEST(CountVisibleDevicesTest, AUuidNamedTwiceHidesEveryDevice) {
  EXPECT_EQ(CountVisibleDevices(kTwo[0] + "," + kTwo[0], kTwo), 0);
  // Two prefixes of the same device.
  EXPECT_EQ(CountVisibleDevices(kTwo[0] + "," + kTwo[0].substr(0, 40), kTwo), 0);
}

}  // namespace
}  // namespace faultline
