// Checks F1's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target): legacy shows the exact documented signature,
// fixed and workaround pass with the baseline's minibatches.
#include <gtest/gtest.h>

#include "repro/F1/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F1Test, LegacyFailsInsideSampleNeighborsInAForkedWorkerWithInitializationError) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F1", "legacy", runtime);
  ExpectReproducedWith(o, F1Legacy(runtime));
  ExpectInitializationSiteNamed(o, runtime, "ProbeCudaLikeACudaBuild");
}

TEST(F1Test, FixedPassesWithBaselineMinibatches) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F1", "fixed", runtime);
  ExpectPassedWith(o, "passed: 8 minibatches equal to the num_workers = 0 baseline");
}

TEST(F1Test, SpawnWorkaroundPassesWithBaselineMinibatches) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F1", "workaround", runtime);
  ExpectPassedWith(o, "passed: 8 minibatches equal to the num_workers = 0 baseline");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
