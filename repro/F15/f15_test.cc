// Checks F15's variants, each in a fresh process, on simcuda (and on real
// CUDA in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F15/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F15Test, LegacyEagerBackendImportMakesForkedWorkersFailLazyInit) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F15", "legacy", runtime);
  ExpectReproducedWith(o, F15LegacyWorker(runtime));
  // The backend's import initialized CUDA, under the launcher's import.
  ExpectInitializationSiteNamed(o, runtime, "ImportFp8Backend");
}

TEST(F15Test, FixedImportWhereUsedLetsForkedWorkersUseCuda) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F15", "fixed", runtime);
  ExpectPassedWith(o, "passed: every worker's device gather equals the host gather");
}

TEST(F15Test, SpawnedWorkersPassAfterTheEagerImport) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F15", "workaround", runtime);
  ExpectPassedWith(o, "passed: every worker's device gather equals the host gather");
  EXPECT_THAT(o.transcript, testing::HasSubstr("workers by spawn")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
