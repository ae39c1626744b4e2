// Implements ProcessAtPid with the raw clone3 system call (glibc has no wrapper).
#include "reference/process/process_at_pid.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "reference/process/process_ref.h"

namespace faultline {
namespace {

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<ProcessAtPid> ProcessAtPid::Start(pid_t pid, uint64_t other_than_ticks, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // Not PR_SET_PDEATHSIG: it fires when the creating thread ends, and a
  // test's `during` thread ends before the test looks at the stand-in.
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) != 0) return UnavailableError(std::string("pipe2: ") + std::strerror(errno));
  // The stand-in's end and this process's: the stand-in never returns into
  // this frame (it ends with exit_group), so only this process closes them.
  UniqueFd read_end(lifeline[0]), write_end(lifeline[1]);
  for (;;) {
    pid_t wanted = pid;
    clone_args args;
    std::memset(&args, 0, sizeof(args));
    args.exit_signal = SIGCHLD;
    args.set_tid = reinterpret_cast<uintptr_t>(&wanted);
    args.set_tid_size = 1;
    const long started = syscall(SYS_clone3, &args, sizeof(args));
    if (started == 0) {
      // The stand-in. Raw system calls only: a sanitizer's read() or
      // close() may take a lock that another thread held at the clone.
      syscall(SYS_close, write_end.get());
      char byte;
      while (syscall(SYS_read, read_end.get(), &byte, 1) < 0 && errno == EINTR) {  // returns at end of file
      }
      syscall(SYS_exit_group, 0);
    }
    if (started > 0) {
      const std::optional<ProcessRef> ref = ProcessRefOf(static_cast<pid_t>(started));
      if (ref && ref->start_ticks != other_than_ticks) {
        read_end.reset();
        return ProcessAtPid(static_cast<pid_t>(started), std::move(write_end));
      }
      KillAndReap(static_cast<pid_t>(started));  // the same tick: again, in a later one
    } else if (errno != EEXIST) {
      const int code = errno;
      return FailedPreconditionError("cannot start a process at pid " + std::to_string(pid) +
                                     ": clone3 with set_tid failed: " + std::strerror(code) +
                                     (code == EPERM ? " (it needs CAP_SYS_ADMIN; run as root)" : ""));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError("pid " + std::to_string(pid) + " was still taken after " +
                              std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // retry: its old process is not reaped yet
  }
}

// The lifeline (a member) closes after this, once the stand-in is reaped.
ProcessAtPid::~ProcessAtPid() {
  if (pid_ > 0) KillAndReap(pid_);
}

bool ProcessAtPid::Running() const {
  siginfo_t info{};
  int r;
  while ((r = waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT)) != 0 && errno == EINTR) {
  }
  return r == 0 && info.si_pid == 0;  // no state change to report: it still runs
}

}  // namespace faultline
