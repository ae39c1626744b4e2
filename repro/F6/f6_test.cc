// Checks F6's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gtest/gtest.h>

#include "repro/F6/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F6Test, LegacyCuInitProbeAtImportLeavesAForkedWorkerWithNoActiveDriver) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F6", "legacy", runtime);
  // CUDA_ERROR_NOT_INITIALIZED (3), cuInit's in the forked worker, with the whole documented message.
  ExpectReproducedWith(o, F6LegacyWorker(runtime));
  // CUDA was initialized by the backend's static initializer, through dlopen.
  ExpectInitializationSiteNamed(o, runtime, "faultline_f6_host_cu_init");
  ExpectInitializationSiteNamed(o, runtime, "dlopen");
}

TEST(F6Test, FixedNvmlProbeLetsAForkedWorkerFindItsDriver) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F6", "fixed", runtime);
  ExpectPassedWith(o, "passed: the worker's device gather equals the host gather");
}

TEST(F6Test, SpawnWorkaroundPassesWithTheCuInitProbe) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F6", "workaround", runtime);
  ExpectPassedWith(o, "worker 0 is started by spawn");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
