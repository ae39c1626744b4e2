// Checks F9's variants, each in a fresh process started with
// CUDA_VISIBLE_DEVICES=0,1 and 2 simulated devices (and on real CUDA in the
// gpu-tagged target, which needs 2 GPUs and fails, saying so, with fewer).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F9/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F9Test, LegacyCountCachedBeforeTheVariableChangedPromisesAGoneDevice) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F9", "legacy", runtime);
  ASSERT_TRUE(o.reproduced) << o.transcript;
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->name, "cudaErrorInvalidDevice");
  EXPECT_EQ(o.error->code, 101);
  EXPECT_EQ(o.error->step, "set_device");
  EXPECT_TRUE(RegexFullMatch(o.error->process, R"(main process \(pid \d+\))")) << o.error->process;
  EXPECT_EQ(o.error->message.rfind("cudaSetDevice failed: invalid device ordinal", 0), 0u) << o.error->message;
  EXPECT_THAT(o.transcript, testing::HasSubstr("CUDA_VISIBLE_DEVICES=1, CUDA initialized: device_count() = 2, cudaGetDeviceCount = 1"))
      << o.transcript;
}

TEST(F9Test, FixedCountIsNotCachedBeforeCudaIsInitialized) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F9", "fixed", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("device_count() = 1, cudaGetDeviceCount = 1")) << o.transcript;
}

TEST(F9Test, StatelessCountWorkaroundPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F9", "workaround", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
