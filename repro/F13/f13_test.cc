// Checks F13's variants, each in a fresh process, on simcuda (and on real
// CUDA in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F13/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F13Test, LegacyPinningCheckFailsInAForkedWorker) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F13", "legacy", runtime);
  ExpectReproducedWith(o, F13LegacyWorker(runtime));
  // The parent's torch.empty(1, device="cuda:0") initialized CUDA.
  ExpectInitializationSiteNamed(o, runtime, "InitializeCudaLikeTorchEmpty");
}

TEST(F13Test, FixedLoadWithoutThePinningCheckPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F13", "fixed", runtime);
  ExpectPassedWith(o, "passed: the worker's loaded values equal the host's");
}

TEST(F13Test, SpawnedWorkerPassesWithThePinningCheck) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F13", "workaround", runtime);
  ExpectPassedWith(o, "passed: the worker's loaded values equal the host's");
  EXPECT_THAT(o.transcript, testing::HasSubstr("worker started by spawn")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
