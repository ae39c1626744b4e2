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
  ExpectReproducedWith(o, F9LegacyStaleCount(runtime));
  EXPECT_THAT(o.transcript, testing::HasSubstr(
                                "CUDA_VISIBLE_DEVICES=1, CUDA initialized: device_count() = 2, cudaGetDeviceCount = 1"))
      << o.transcript;
}

TEST(F9Test, FixedCountIsNotCachedBeforeCudaIsInitialized) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F9", "fixed", runtime);
  ExpectPassedWith(o,
                   "passed: device_count() equals cudaGetDeviceCount and the rows copied "
                   "through it equal the host rows");
  EXPECT_THAT(o.transcript, testing::HasSubstr("device_count() = 1, cudaGetDeviceCount = 1")) << o.transcript;
}

TEST(F9Test, StatelessCountWorkaroundPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F9", "workaround", runtime);
  ExpectPassedWith(o,
                   "passed: device_count() equals cudaGetDeviceCount and the rows copied "
                   "through it equal the host rows");
  EXPECT_THAT(o.transcript, testing::HasSubstr("device_count() = 1, cudaGetDeviceCount = 1")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
