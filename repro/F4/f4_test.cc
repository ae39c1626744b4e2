// Checks F4's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F4/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F4Test, LegacyEagerPluginMakesAForkedWorkerFailLazyInit) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "legacy", runtime);
  ExpectReproducedWith(o, F4LegacyWorker(runtime));
  // CUDA was initialized by the plugin's static initializer, through dlopen
  // (glibc's frames are named only with its debug symbols: libc6-dbg, which
  // ci/setup.sh installs).
  ExpectInitializationSiteNamed(o, runtime, "faultline_plugin_host_init_cuda");
  ExpectInitializationSiteNamed(o, runtime, "dlopen");
}

TEST(F4Test, FixedLazyPluginLetsAForkedWorkerUseCuda) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "fixed", runtime);
  ExpectPassedWith(o, "passed: the child's device gather equals the host gather");
  EXPECT_THAT(o.transcript, testing::HasSubstr("the parent then used the plugin: ok")) << o.transcript;
}

TEST(F4Test, SpawnWorkaroundPassesWithTheEagerPlugin) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "workaround", runtime);
  ExpectPassedWith(o, "passed: the child's device gather equals the host gather");
  EXPECT_THAT(o.transcript, testing::HasSubstr("worker 0 started by spawn")) << o.transcript;
}

TEST(F4Test, ServiceChildStartedByForkFailsAndBySpawnPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome forked = RunIsolated("F4", "service-fork", runtime);
  ExpectReproducedWith(forked, F4ServiceFork(runtime));
  ExpectInitializationSiteNamed(forked, runtime, "RunService");
  Outcome spawned = RunIsolated("F4", "service-spawn", runtime);
  ExpectPassedWith(spawned, "passed: the child's device gather equals the host gather");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
