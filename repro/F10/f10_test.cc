// Checks F10's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target; the failure is host-only, so both must agree).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F10/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F10Test, LegacySeedDoesNotReseedTheThreadThatAlreadySampled) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F10", "legacy", runtime);
  ExpectReproducedWith(o, kF10Legacy);
  // The first run (generator made after the seed) matched; one generator in all.
  EXPECT_THAT(
      o.transcript,
      testing::HasSubstr("run 1: 36 picks, generators made so far 1, equal to a generator freshly seeded with 2024"))
      << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("run 2: 36 picks, generators made so far 1, differs")) << o.transcript;
}

TEST(F10Test, FixedReseedsTheCallingThreadAndBothRunsAreBitIdentical) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F10", "fixed", runtime);
  ExpectPassedWith(o, "run 2: 36 picks, generators made so far 1, equal to a generator freshly seeded");
}

TEST(F10Test, WorkaroundSamplesOnThreadsStartedAfterTheSeed) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F10", "workaround", runtime);
  ExpectPassedWith(o, "run 2: 36 picks, generators made so far 2, equal to a generator freshly seeded");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
