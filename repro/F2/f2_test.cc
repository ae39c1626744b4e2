// Checks F2's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F2/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F2Test, LegacyForkedWorkerFailsOnCudaHostUnregisterWithInitializationError) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "legacy", runtime);
  ExpectReproducedWith(o, F2LegacyFork(runtime));
  ExpectInitializationSiteNamed(o, runtime, "PlaceOnDevice");  // the parent pinned the graph
}

TEST(F2Test, LegacySpawnedWorkerCannotUnpinWhatItDidNotPin) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "legacy-spawn", runtime);
  ExpectReproducedWith(o, F2LegacySpawn(runtime));
}

TEST(F2Test, FixedRefusesWorkersWithAReasonAndItsAdviceGivesTheBaseline) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "fixed", runtime);
  ExpectPassedWith(o, std::string("fixed loader refused num_workers = 2: ") + kF2FixedRefusal);
  // Owner-only unpin: a forked worker dropped its copy of the parent's pinned
  // tensor without a CUDA call (simcuda records it), and the pin stands.
  EXPECT_THAT(o.transcript, testing::HasSubstr("ran the fixed restore step and dropped its copy of the tensor "))
      << o.transcript;
  if (runtime == RuntimeKind::kSimCuda) {
    EXPECT_THAT(o.transcript, testing::HasSubstr("dropped its copy of the tensor without a CUDA call\n"))
        << o.transcript;
  }
  EXPECT_THAT(o.transcript, testing::HasSubstr("the parent's pin stands (pinned_by pid ")) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("mode pinned-cuda, num_workers 0")) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("passed: 8 minibatches equal to the num_workers = 0 baseline"))
      << o.transcript;
}

TEST(F2Test, CpuCudaWithWorkersPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "workaround", runtime);
  ExpectPassedWith(o, "passed: 8 minibatches equal to the num_workers = 0 baseline");
  EXPECT_THAT(o.transcript, testing::HasSubstr("mode cpu-cuda, num_workers 2, fork")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
