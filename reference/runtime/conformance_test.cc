// The conformance test: every scenario must observe the expected text on
// simcuda (always) and on the real CUDA runtime (the gpu-tagged target).
#include "reference/runtime/conformance.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace faultline {
namespace conformance {
namespace {

RuntimeKind BackendUnderTest() {
  const char* value = std::getenv("FAULTLINE_CONFORMANCE_RUNTIME");
  return value != nullptr && std::strcmp(value, "cuda") == 0 ? RuntimeKind::kCuda : RuntimeKind::kSimCuda;
}

class ConformanceTest : public testing::TestWithParam<Scenario> {};

TEST_P(ConformanceTest, ObservesWhatRealCudaDoes) {
  const Scenario& scenario = GetParam();
  const RuntimeKind backend = BackendUnderTest();
  if (backend == RuntimeKind::kCuda) {
    if (GetRuntime(RuntimeKind::kCuda).DeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    if (scenario.simcuda_only) GTEST_SKIP() << "not reproducible on a machine with a working driver";
  }
  SCOPED_TRACE(scenario.fact);
  auto observed = RunScenario(scenario, backend);
  ASSERT_TRUE(observed.ok()) << observed.status();
  EXPECT_EQ(*observed, scenario.expected);
}

INSTANTIATE_TEST_SUITE_P(Facts, ConformanceTest, testing::ValuesIn(Scenarios()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace conformance
}  // namespace faultline
