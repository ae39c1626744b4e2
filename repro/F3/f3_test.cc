// Checks F3's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
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
    SCOPED_TRACE(variant);
    ExpectPassedWith(o, "forward returned [6, 8] rows on cuda:0");
  }
}

TEST(F3Test, WorkaroundPassesHostIds) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F3", "workaround", runtime);
  ExpectPassedWith(o, "forward returned [6, 8] rows on cpu");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
