// Checks F4's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F4/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

void ExpectCannotReinitialize(const Outcome& o, const std::string& process_pattern) {
  ASSERT_TRUE(o.reproduced) << o.transcript;
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->name, "failed_precondition");  // PyTorch's RuntimeError: no CUDA code
  EXPECT_EQ(o.error->code, 0);
  EXPECT_EQ(o.error->step, "lazy_init");
  EXPECT_TRUE(RegexFullMatch(o.error->process, process_pattern)) << o.error->process;
  EXPECT_EQ(o.error->message.rfind(std::string(kCannotReinitializeCuda) +
                                       " (cuInit failed: initialization error",
                                   0),
            0u)
      << o.error->message;
}

TEST(F4Test, LegacyEagerPluginMakesAForkedWorkerFailLazyInit) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "legacy", runtime);
  ExpectCannotReinitialize(o, R"(worker 0 \(pid \d+\))");
  // CUDA was initialized by the plugin's static initializer, through dlopen.
  ExpectInitializationSiteNamed(o, runtime, "faultline_plugin_host_init_cuda");
  ExpectInitializationSiteNamed(o, runtime, "dlopen");
}

TEST(F4Test, FixedLazyPluginLetsAForkedWorkerUseCuda) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "fixed", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("passed: the child's device gather equals the host gather"))
      << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("the parent then used the plugin: ok")) << o.transcript;
}

TEST(F4Test, SpawnWorkaroundPassesWithTheEagerPlugin) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F4", "workaround", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("worker 0 started by spawn")) << o.transcript;
}

TEST(F4Test, ServiceChildStartedByForkFailsAndBySpawnPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome forked = RunIsolated("F4", "service-fork", runtime);
  ExpectCannotReinitialize(forked, R"(service child \(pid \d+\))");
  ExpectInitializationSiteNamed(forked, runtime, "RunService");
  Outcome spawned = RunIsolated("F4", "service-spawn", runtime);
  EXPECT_TRUE(spawned.passed && !spawned.error) << spawned.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
