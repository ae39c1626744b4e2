// Checks F12's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target; the failure is host-only, so both must agree).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F12/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F12Test, LegacyUpdatesARowLookedUpTwiceOncePerLookup) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F12", "legacy", runtime);
  ExpectReproducedWith(o, kF12Legacy);
  // Exactly the two ids found in both lookups (3 and 7) are wrong, and the
  // Adagrad state of row 3 holds two updates.
  EXPECT_THAT(o.transcript, testing::HasSubstr("rows differing from the dense single-process reference: 2"))
      << o.transcript;
  EXPECT_THAT(o.transcript,
              testing::HasSubstr("Adagrad state emb_sum[3][0] = 1.015625 (expected after one update: 0.173611104)"))
      << o.transcript;
}

TEST(F12Test, FixedStepsEqualTheDenseReference) {
  RUNTIME_UNDER_TEST(runtime);
  for (const char* variant : {"fixed", "fixed-adam"}) {
    Outcome o = RunIsolated("F12", variant, runtime);
    SCOPED_TRACE(variant);
    ExpectPassedWith(o, "rows differing from the dense single-process reference: 0");
  }
}

TEST(F12Test, WorkaroundOneLookupPerStepEqualsTheDenseReference) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F12", "workaround", runtime);
  ExpectPassedWith(o, "Adagrad state emb_sum[3][0] = 0.173611104");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
