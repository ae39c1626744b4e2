// Checks F14's variants, each in a fresh process, on simcuda (and on real
// CUDA in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F14/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F14Test, LegacyLoaderCheckMakesTheWorkersPinningCheckFail) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F14", "legacy", runtime);
  ExpectReproducedWith(o, F14LegacyWorker(runtime));
  // The loader's availability check initialized CUDA, not the script.
  ExpectInitializationSiteNamed(o, runtime, "PinMemoryAvailableLikeDataLoader");
}

TEST(F14Test, FixedIsPinnedAnswersWithoutCudaInTheWorker) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F14", "fixed", runtime);
  ExpectPassedWith(o, "passed: the worker's loaded values equal the host's");
}

TEST(F14Test, SpawnedWorkerPassesWithThePinningCheck) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F14", "workaround", runtime);
  ExpectPassedWith(o, "passed: the worker's loaded values equal the host's");
  EXPECT_THAT(o.transcript, testing::HasSubstr("worker by spawn")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
