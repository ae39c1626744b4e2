// Checks F8's variants, each in a fresh process with 2 simulated devices (and
// on real CUDA in the gpu-tagged target, which needs 2 GPUs and fails, saying
// so, with fewer).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F8/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F8Test, LegacyPinThreadCreatesAPrimaryContextOnDevice0) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F8", "legacy", runtime);
  ExpectReproducedWith(o, kF8LegacyPinThread);
  EXPECT_THAT(o.transcript, testing::HasSubstr("primary contexts: device 0 active, device 1 active")) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("rows copied through device 1 equal the host rows")) << o.transcript;
}

TEST(F8Test, FixedPinThreadOnTheTrainingDeviceLeavesDevice0Alone) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F8", "fixed", runtime);
  ExpectPassedWith(o, "primary contexts: device 0 inactive, device 1 active");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
