// The conformance test: every scenario must observe the expected text on the
// runtime under test (FAULTLINE_TEST_RUNTIME: simcuda, or cuda in the gpu
// targets and in the no-driver target of the CPU suite). FAULTLINE_CONFORMANCE_DRIVER
// says what the machine has (present, the default, or none), and
// FAULTLINE_CONFORMANCE_DEVICES which scenarios a real-CUDA target takes:
// those that need 1 GPU (the default) or 2 (the multi_device target).
#include "properties/conformance.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "reference/base/status_matchers.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace conformance {
namespace {

Driver MachineDriver() {
  const char* value = std::getenv("FAULTLINE_CONFORMANCE_DRIVER");
  return value != nullptr && std::string(value) == "none" ? Driver::kNone : Driver::kPresent;
}

RuntimeKind Backend() {
  Result<RuntimeKind> kind = RuntimeKindUnderTest();
  return kind.ok() ? *kind : RuntimeKind::kSimCuda;
}

int TargetDevices() {
  const char* value = std::getenv("FAULTLINE_CONFORMANCE_DEVICES");
  return value != nullptr && std::string(value) == "2" ? 2 : 1;
}

// A value the test does not know would quietly pick a default set.
TEST(ConformanceConfigTest, TheEnvironmentHoldsKnownValues) {
  const char* devices = std::getenv("FAULTLINE_CONFORMANCE_DEVICES");
  EXPECT_TRUE(devices == nullptr || std::string(devices) == "1" || std::string(devices) == "2")
      << "FAULTLINE_CONFORMANCE_DEVICES is '" << devices << "'; expected 1 or 2";
  const char* driver = std::getenv("FAULTLINE_CONFORMANCE_DRIVER");
  EXPECT_TRUE(driver == nullptr || std::string(driver) == "present" || std::string(driver) == "none")
      << "FAULTLINE_CONFORMANCE_DRIVER is '" << driver << "'; expected present or none";
}

class ConformanceTest : public testing::TestWithParam<Scenario> {};

TEST_P(ConformanceTest, ObservesWhatRealCudaDoes) {
  const Scenario& scenario = GetParam();
  FL_ASSERT_OK(RuntimeKindUnderTest());
  const RuntimeKind backend = Backend();
  if (backend == RuntimeKind::kCuda && MachineDriver() == Driver::kPresent) {
    // On a GPU machine a missing device is a failure, never a skip (probed
    // in a forked child: asking does not initialize CUDA in this process).
    Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
    ASSERT_TRUE(count.ok() && *count > 0)
        << "no usable CUDA device: " << (count.ok() ? "0 devices" : count.status().ToString());
    ASSERT_GE(*count, scenario.devices) << "the scenario needs " << scenario.devices << " GPUs; this machine has "
                                        << *count;
  }
  if (backend == RuntimeKind::kCuda && MachineDriver() == Driver::kNone) {
    // The no-driver target checks real libcudart on a machine without a
    // driver; where one is installed the no-driver scenarios cannot run,
    // and that is a failure, not a skip that would read as a pass.
    Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
    const bool no_driver = !count.ok() && count.status().cuda_error() && count.status().cuda_error()->code == 35;
    ASSERT_TRUE(no_driver || scenario.driver != Driver::kNone)
        << "a CUDA driver is installed here, so this no-driver scenario cannot run; this target is for machines "
           "without one (on a GPU machine, conformance_cuda_test covers the driver; leave this target out with "
           "--test_tag_filters=-gpu,-benchmark,-no_driver)";
  }
  SCOPED_TRACE(scenario.fact + " [source: " + scenario.source + "]");
  auto observed = RunScenario(scenario, backend);
  FL_ASSERT_OK(observed);
  EXPECT_EQ(*observed, scenario.expected);
}

INSTANTIATE_TEST_SUITE_P(Facts, ConformanceTest,
                         testing::ValuesIn(ScenariosFor(Backend(), MachineDriver(), TargetDevices())),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace conformance
}  // namespace faultline
