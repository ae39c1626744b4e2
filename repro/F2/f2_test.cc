// Checks F2's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F2/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

void ExpectRestoreStateFailure(const Outcome& o, const std::string& name, int code, const std::string& cuda_text) {
  ASSERT_TRUE(o.reproduced) << o.transcript;
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->name, name);
  EXPECT_EQ(o.error->code, code);
  EXPECT_EQ(o.error->step, "restore_state");
  EXPECT_TRUE(RegexFullMatch(o.error->process, R"(worker [01] \(pid \d+\))")) << o.error->process;
  EXPECT_TRUE(RegexSearch(o.error->message, R"(^worker [01] \(pid \d+\) failed in restore_state on minibatch [01]: )"
                                            "cudaHostUnregister failed: " +
                                                cuda_text))
      << o.error->message;
}

TEST(F2Test, LegacyForkedWorkerFailsOnCudaHostUnregisterWithInitializationError) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "legacy", runtime);
  ExpectRestoreStateFailure(o, "cudaErrorInitializationError", 3, "initialization error");
  ExpectInitializationSiteNamed(o, runtime, "PlaceOnDevice");  // the parent pinned the graph
}

TEST(F2Test, LegacySpawnedWorkerCannotUnpinWhatItDidNotPin) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "legacy-spawn", runtime);
  ExpectRestoreStateFailure(o, "cudaErrorHostMemoryNotRegistered", 713,
                            "pointer does not correspond to a registered memory region");
}

TEST(F2Test, FixedRefusesWorkersWithAReasonAndItsAdviceGivesTheBaseline) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "fixed", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr(std::string("fixed loader refused num_workers = 2: ") + kF2FixedRefusal))
      << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("mode pinned-cuda, num_workers 0")) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("passed: 8 minibatches equal to the num_workers = 0 baseline"))
      << o.transcript;
}

TEST(F2Test, CpuCudaWithWorkersPasses) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F2", "workaround", runtime);
  EXPECT_TRUE(o.passed && !o.error) << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("mode cpu-cuda, num_workers 2, fork")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
