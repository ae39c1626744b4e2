// Checks F3's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F3/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F3Test, LegacyHostViewOfDeviceIdsFailsInNid2PartId) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F3", "legacy", runtime);
  ExpectReproducedWith(o, kF3Legacy);
}

TEST(F3Test, FixedVariantsMatchTheHostIdBaselineAndTheDenseStep) {
  RUNTIME_UNDER_TEST(runtime);
  for (const char* variant : {"fixed", "fixed-device-lookup"}) {
    Outcome o = RunIsolated("F3", variant, runtime);
    EXPECT_TRUE(o.passed && !o.error) << variant << "\n" << o.transcript;
    EXPECT_THAT(o.transcript, testing::HasSubstr("forward returned [6, 8] rows on cuda:0")) << o.transcript;
  }
}

TEST(F3Test, WorkaroundPassesHostIds) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F3", "workaround", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("forward returned [6, 8] rows on cpu")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
