// Checks F7's variants, each in a fresh process: the legacy trainer hangs on
// the shared data queue after a worker is killed (proven, then released);
// PR 3474's liveness check names the dead worker with PyTorch's text; the
// timeout option gives up with PyTorch's timeout text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "repro/F7/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

// Returns the pid of worker `worker` (0 or 1) from the transcript's header,
// "F7: 2 workers (pids A, B) share one data queue", or "" if it is missing.
std::string WorkerPid(const std::string& transcript, int worker) {
  const std::vector<std::string> pids = RegexGroups(transcript, R"(F7: 2 workers \(pids (\d+), (\d+)\))");
  return pids.size() == 2 ? pids[worker] : "";
}

TEST(F7Test, LegacyTrainerHangsOnTheSharedQueueAfterAWorkerIsKilled) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "legacy", runtime);
  ASSERT_NO_FATAL_FAILURE(ExpectReproducedWith(o, kF7LegacyHang));
  // The trainer was blocked at least the 1.5 s deadline, and the dead worker
  // named is worker 1 of the header's "workers (pids A, B)".
  const std::vector<std::string> hang =
      RegexGroups(o.error->message, R"(still blocked after (\d+) ms although worker 1 \(pid (\d+)\))");
  ASSERT_EQ(hang.size(), 2u) << o.error->message;
  EXPECT_GE(std::stoll(hang[0]), kF7HangDeadline.count()) << o.error->message;
  EXPECT_EQ(hang[1], WorkerPid(o.transcript, 1)) << o.transcript;
  // Minibatch 0 came from the live worker; 1 never could.
  EXPECT_THAT(o.transcript, testing::HasSubstr("received minibatches: 0\n")) << o.transcript;
}

TEST(F7Test, FixedLivenessCheckNamesTheKilledWorkerAtOnce) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "fixed", runtime);
  ASSERT_EQ(VerdictName(o.verdict), std::string("passed")) << o.transcript;
  ASSERT_TRUE(o.error.has_value()) << o.transcript;
  EXPECT_EQ(o.error->name, "RuntimeError");
  EXPECT_EQ(o.error->message, "DataLoader worker (pid " + WorkerPid(o.transcript, 1) + ") is killed by signal: Killed.")
      << o.transcript;
  EXPECT_THAT(o.transcript, testing::HasSubstr("minibatch 0 equals the single-process sample")) << o.transcript;
}

TEST(F7Test, WorkaroundTimeoutGivesUpInsteadOfHanging) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F7", "workaround", runtime);
  ASSERT_EQ(VerdictName(o.verdict), std::string("passed")) << o.transcript;
  ASSERT_TRUE(o.error.has_value()) << o.transcript;
  EXPECT_EQ(o.error->message, "DataLoader timed out after 1 seconds");
  EXPECT_THAT(o.transcript, testing::HasSubstr("minibatch 0 equals the single-process sample")) << o.transcript;
}

}  // namespace
}  // namespace repro
}  // namespace faultline
