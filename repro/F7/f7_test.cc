// Checks F7's variants, each in a fresh process: the legacy trainer hangs on
// the shared data queue after a worker is killed (proven, then released);
// PR 3474's liveness check names the dead worker with PyTorch's text; the
// timeout option gives up with PyTorch's timeout text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F7/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F7Test, LegacyTrainerHangsOnTheSharedQueueAfterAWorkerIsKilled) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "legacy", runtime);
  ASSERT_TRUE(o.reproduced) << o.transcript;
  ASSERT_TRUE(o.error.has_value());
  EXPECT_EQ(o.error->name, "Hang");
  EXPECT_EQ(o.error->code, 0);
  EXPECT_EQ(o.error->step, "data_queue.get");
  EXPECT_TRUE(RegexFullMatch(o.error->process, R"(main process \(pid \d+\))")) << o.error->process;
  EXPECT_TRUE(
      RegexFullMatch(o.error->message,
                     R"(the trainer is blocked in data_queue\.get\(\) waiting for minibatch 1: still blocked after )"
                     R"(\d+ ms although worker 1 \(pid \d+\) was killed by signal 9; nothing reports the dead worker, )"
                     R"(and the queue never ends because every process holds its write end)"))
      << o.error->message;
  // Minibatch 0 came from the live worker; 1 never could.
  EXPECT_THAT(o.transcript, testing::HasSubstr("received minibatches: 0\n")) << o.transcript;
}

TEST(F7Test, FixedLivenessCheckNamesTheKilledWorkerAtOnce) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "fixed", runtime);
  ASSERT_TRUE(o.passed) << o.transcript;
  ASSERT_TRUE(o.error.has_value()) << o.transcript;
  EXPECT_EQ(o.error->name, "RuntimeError");
  EXPECT_TRUE(RegexFullMatch(o.error->message, R"(DataLoader worker \(pid \d+\) is killed by signal: Killed\.)"))
      << o.error->message;
  EXPECT_THAT(o.transcript, testing::HasSubstr("minibatch 0 equals the single-process sample")) << o.transcript;
}

TEST(F7Test, WorkaroundTimeoutGivesUpInsteadOfHanging) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "workaround", runtime);
  ASSERT_TRUE(o.passed) << o.transcript;
  ASSERT_TRUE(o.error.has_value()) << o.transcript;
  EXPECT_EQ(o.error->message, "DataLoader timed out after 1 seconds");
  EXPECT_THAT(o.transcript, testing::HasSubstr("minibatch 0 equals the single-process sample")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
