// Checks F5's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F5/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F5Test, LegacyDeviceCountMakesForkedWorkersFailLazyInit) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F5", "legacy", runtime);
  ExpectReproducedWith(o, F5LegacyWorker(runtime));
  // CUDA was initialized by the parent's device count.
  ExpectInitializationSiteNamed(o, runtime, "DeviceCountLegacy");
}

TEST(F5Test, FixedNvmlCountLetsForkedWorkersUseCuda) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F5", "fixed", runtime);
  ExpectPassedWith(o, "passed: every worker's device gather equals the host gather");
}

TEST(F5Test, SpawnWorkaroundPassesAfterTheLegacyCount) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F5", "workaround", runtime);
  ExpectPassedWith(o, "passed: every worker's device gather equals the host gather");
  EXPECT_THAT(o.transcript, testing::HasSubstr("workers by spawn")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
