// ProcessRef and ProcessHandle name one process, never the process that got
// its pid after it: each case makes that happen at once with ProcessAtPid.
#include "reference/process/process_ref.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/process/process_at_pid.h"

namespace faultline {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A forked child that waits in pause() until killed.
pid_t StartPausedChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  return pid;
}

void Reap(pid_t pid) {
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

TEST(ProcessRefTest, ThisProcessIsRunningUnderItsOwnRef) {
  const ProcessRef self = SelfProcessRef();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_GT(self.start_ticks, 0u);
  EXPECT_TRUE(ProcessRunning(self));
  EXPECT_FALSE(ProcessRunning(ProcessRef{self.pid, self.start_ticks + 1}));
  EXPECT_FALSE(ProcessHandle::Open(self).ended());
}

TEST(ProcessRefTest, AZombieHasEnded) {
  const pid_t pid = StartPausedChild();
  ASSERT_GT(pid, 0);
  const std::optional<ProcessRef> ref = ProcessRefOf(pid);
  ASSERT_TRUE(ref.has_value());
  ProcessHandle handle = ProcessHandle::Open(*ref);
  EXPECT_FALSE(handle.ended());
  kill(pid, SIGKILL);
  EXPECT_TRUE(handle.EndsBy(steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_FALSE(ProcessRunning(*ref)) << "a zombie is not running";
  EXPECT_TRUE(ProcessHandle::Open(*ref).ended());
  Reap(pid);
}

// The process that had the pid ended and was reaped; another now has the pid.
TEST(ProcessRefTest, AProcessThatGotTheEndedOnesPidIsNotNamedByItsRef) {
  const pid_t pid = StartPausedChild();
  ASSERT_GT(pid, 0);
  const std::optional<ProcessRef> ref = ProcessRefOf(pid);
  ASSERT_TRUE(ref.has_value());
  kill(pid, SIGKILL);
  Reap(pid);
  Result<ProcessAtPid> stranger = ProcessAtPid::Start(pid, ref->start_ticks, milliseconds(5000));
  FL_ASSERT_OK(stranger);
  ASSERT_EQ(stranger->pid(), pid);

  const std::optional<ProcessRef> stranger_ref = ProcessRefOf(pid);
  ASSERT_TRUE(stranger_ref.has_value());
  EXPECT_TRUE(ProcessRunning(*stranger_ref)) << "the pid is running: the stranger's";
  EXPECT_FALSE(ProcessRunning(*ref));
  ProcessHandle handle = ProcessHandle::Open(*ref);
  EXPECT_TRUE(handle.ended());
  handle.Signal(SIGKILL);
  EXPECT_TRUE(stranger->Running()) << "a signal for the ended process reached the stranger";
}

// The handle was opened while its process ran: it stays that process's.
TEST(ProcessRefTest, AHandleOpenedBeforeTheEndNeverSignalsTheNextProcessWithThePid) {
  const pid_t pid = StartPausedChild();
  ASSERT_GT(pid, 0);
  const std::optional<ProcessRef> ref = ProcessRefOf(pid);
  ASSERT_TRUE(ref.has_value());
  ProcessHandle handle = ProcessHandle::Open(*ref);
  ASSERT_FALSE(handle.ended());
  handle.Signal(SIGKILL);
  Reap(pid);
  Result<ProcessAtPid> stranger = ProcessAtPid::Start(pid, ref->start_ticks, milliseconds(5000));
  FL_ASSERT_OK(stranger);

  handle.Signal(SIGKILL);
  EXPECT_TRUE(stranger->Running()) << "the handle's signal reached the process that reused its pid";
  EXPECT_TRUE(handle.EndsBy(steady_clock::now()));
}

// Out of descriptors, the handle still knows its process runs, and still
// sees it end: whether the pidfd cannot be opened (no descriptor left) or
// it takes the last one and /proc/PID/stat cannot be read to check it.
// Before, either read as "ended", and the MPI launcher neither waited for
// nor killed a rank that was still running.
TEST(ProcessRefTest, AHandleWithNoDescriptorLeftStillSeesItsProcessRunAndEnd) {
  for (int left : {0, 1}) {
    SCOPED_TRACE(std::to_string(left) + " descriptor(s) left");
    const pid_t pid = StartPausedChild();
    ASSERT_GT(pid, 0);
    const std::optional<ProcessRef> ref = ProcessRefOf(pid);
    ASSERT_TRUE(ref.has_value());
    const int lowest_free = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(lowest_free, 0);
    close(lowest_free);
    rlimit saved{};
    getrlimit(RLIMIT_NOFILE, &saved);
    rlimit lowered = saved;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free + left);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
    ProcessHandle handle = ProcessHandle::Open(*ref);
    setrlimit(RLIMIT_NOFILE, &saved);
    EXPECT_FALSE(handle.ended()) << "a running process read as ended";
    handle.Signal(SIGKILL);
    EXPECT_TRUE(handle.EndsBy(steady_clock::now() + std::chrono::seconds(30)));
    kill(pid, SIGKILL);  // in case the handle's did not reach it: Reap must not wait forever
    Reap(pid);
  }
}

TEST(ProcessRefTest, NoProcessHasPidZeroOrBelow) {
  EXPECT_FALSE(ProcessRefOf(0).has_value());
  EXPECT_FALSE(ProcessRefOf(-1).has_value());
  EXPECT_TRUE(ProcessHandle::Open(ProcessRef{}).ended());
}

}  // namespace
}  // namespace faultline
