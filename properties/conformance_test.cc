// The conformance test: every scenario must observe the expected text on the
// runtime under test (FAULTLINE_TEST_RUNTIME: simcuda, or cuda in the gpu
// target and in the no-driver target of the CPU suite). FAULTLINE_CONFORMANCE_DRIVER
// says what the machine has (present, the default, or none): real CUDA runs
// only the scenarios that machine can show (its driver, and enough GPUs).
#include "properties/conformance.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

// The GPUs real CUDA has here (probed in a forked child: asking does not
// initialize CUDA in this process); 1 for simcuda and where none answers, so
// that a scenario needing two is left out on real CUDA rather than failed.
int MachineDevices() {
  if (Backend() != RuntimeKind::kCuda || MachineDriver() != Driver::kPresent) return 1;
  Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
  return count.ok() ? *count : 1;
}

class ConformanceTest : public testing::TestWithParam<Scenario> {};

TEST_P(ConformanceTest, ObservesWhatRealCudaDoes) {
  const Scenario& scenario = GetParam();
  ASSERT_TRUE(RuntimeKindUnderTest().ok()) << RuntimeKindUnderTest().status();
  const RuntimeKind backend = Backend();
  if (backend == RuntimeKind::kCuda && MachineDriver() == Driver::kPresent) {
    // On a GPU machine a missing device is a failure, never a skip.
    Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
    ASSERT_TRUE(count.ok() && *count > 0) << "no usable CUDA device: "
                                          << (count.ok() ? "0 devices" : count.status().ToString());
  }
  if (backend == RuntimeKind::kCuda && MachineDriver() == Driver::kNone) {
    // The no-driver target checks real libcudart on a machine without a
    // driver; where one is installed the no-driver scenarios cannot run.
    Result<int> count = ProbeDeviceCount(RuntimeKind::kCuda);
    const bool no_driver = !count.ok() && count.status().cuda_error() && count.status().cuda_error()->code == 35;
    if (!no_driver && scenario.driver == Driver::kNone) {
      GTEST_SKIP() << "a CUDA driver is installed here; this target checks the no-driver behaviour (the gpu "
                      "target conformance_cuda_test covers this machine)";
    }
  }
  SCOPED_TRACE(scenario.fact + " [source: " + scenario.source + "]");
  auto observed = RunScenario(scenario, backend);
  ASSERT_TRUE(observed.ok()) << observed.status();
  EXPECT_EQ(*observed, scenario.expected);
}

INSTANTIATE_TEST_SUITE_P(Facts, ConformanceTest, testing::ValuesIn(ScenariosFor(Backend(), MachineDriver(), MachineDevices())),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace conformance
}  // namespace faultline
