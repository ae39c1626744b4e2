// Provides child processes for workers and repro scenarios: start one by
// fork (a copy of this process) or by spawn (fork+exec of a fresh image of
// this binary running a registered child entry point), then collect its exit
// code or signal and the transcript it reported.
#ifndef FAULTLINE_REFERENCE_PROCESS_PROCESS_H_
#define FAULTLINE_REFERENCE_PROCESS_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/unique_fd.h"
#include "reference/process/child_registry.h"  // kUncaughtExceptionExitCode

namespace faultline {

enum class StartMethod { kFork, kSpawn };

// Returns "fork" or "spawn".
const char* StartMethodName(StartMethod method);
// Parses "fork" or "spawn"; `what` names the flag in the error.
Result<StartMethod> ParseStartMethod(std::string_view text, std::string_view what = "--start-method");

// How a child process ended.
// How a child ended: exactly one of these.
enum class ChildEnd {
  kExited,    // through exit(): ChildExit::exit_code
  kSignaled,  // killed by ChildExit::signal
  kTimedOut,  // killed (SIGKILL) by Wait() after its deadline
  // It ended, but waitpid found no such child (ECHILD): SIGCHLD is set to
  // SIG_IGN (the kernel reaps children itself) or another waiter reaped it.
  // How it ended is unknown.
  kReapedElsewhere,
};

struct ChildExit {
  pid_t pid = 0;
  ChildEnd end = ChildEnd::kExited;
  int exit_code = 0;       // kExited only (0 otherwise)
  int signal = 0;          // kSignaled, and SIGKILL for kTimedOut (0 otherwise)
  std::string transcript;  // everything the child sent with ReportToParent()

  bool exited() const { return end == ChildEnd::kExited; }
  bool timed_out() const { return end == ChildEnd::kTimedOut; }
  bool succeeded() const { return exited() && exit_code == 0; }
  // Returns e.g. "pid 4242 exited with code 3", "pid 4242 was killed by
  // signal 9 (Killed)" or "pid 4242 ended; its exit status was reaped
  // elsewhere (waitpid: ECHILD)".
  std::string Describe() const;
  // How it ended, without the pid: "exited with code 3", "was killed by
  // signal 9 (Killed)" or "ended" (reaped elsewhere). Not for a timed-out child.
  std::string How() const;
};

// Options for a spawned child.
struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
  // Descriptors the child inherits across the exec (all others close on
  // exec). In the child they are close-on-exec again before its entry
  // point runs, as its report pipe is, and FAULTLINE_REPORT_FD and
  // FAULTLINE_KEPT_FDS are gone from its environment: what it execs in
  // turn inherits neither.
  std::vector<int> keep_fds;
};

// A running child process. Destroying one that is still running kills it
// (SIGKILL) and reaps it, so no path leaks a process.
class ChildProcess {
 public:
  // Forks this process; the child runs `body` and exits with its return
  // value. An exception that escapes `body` never unwinds into the child's
  // copy of the caller's stack (where destructors of the parent's objects,
  // or a test framework's handler, would run the parent's code in the
  // child): the child reports it (ReportToParent: "uncaught exception
  // <type>: <what> in the forked child") and exits with
  // kUncaughtExceptionExitCode.
  static Result<ChildProcess> Fork(std::function<int()> body);
  // Forks and execs this binary with "--faultline-child=<entry>" and `args`.
  static Result<ChildProcess> Spawn(const std::string& entry, const std::vector<std::string>& args,
                                    const SpawnOptions& options = {});
  // Starts `body` (fork) or `entry` (spawn) according to `method`.
  static Result<ChildProcess> Start(StartMethod method, std::function<int()> body, const std::string& entry,
                                    const std::vector<std::string>& args, const SpawnOptions& options = {});

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !reaped_; }
  // Sends `signal` to the child while it is running(): through a pidfd
  // opened right after the fork where the kernel has them (Linux 5.3), so
  // that a child reaped elsewhere (SIGCHLD ignored) is never confused with
  // a process that reused its pid; once TryWait saw it gone (ECHILD
  // included), never.
  void Kill(int signal);
  // Returns how the child ended and drains its transcript, or returns
  // immediately with running() still true when it has not ended (poll).
  // A child that waitpid no longer knows (ECHILD) has ended: it is
  // returned with reaped_elsewhere, not as an error.
  Result<ChildExit> TryWait();
  // Waits up to `timeout` for the child to end; past it, kills the child
  // (SIGKILL) and reports timed_out.
  Result<ChildExit> Wait(std::chrono::milliseconds timeout);
  // Blocks until the child's transcript contains `text` (it reported it with
  // ReportToParent). Fails when the child closes its report pipe (ends)
  // without reporting it, or after `timeout`; the error quotes the
  // transcript so far. The child keeps running either way.
  Status WaitForTranscript(std::string_view text, std::chrono::milliseconds timeout);

 private:
  ChildProcess(pid_t pid, UniqueFd report_fd, UniqueFd pidfd, bool reaped_before_pidfd)
      : pid_(pid),
        report_fd_(std::move(report_fd)),
        pidfd_(std::move(pidfd)),
        reaped_before_pidfd_(reaped_before_pidfd) {}
  // Forks with the report pipe `read_end`, `write_end`; the child runs
  // `in_child`, which ends the process (async-signal-safe calls only, for
  // spawn). The parent takes the read end (non-blocking) and closes the
  // write end; when fork fails both stay with the caller, which closes them.
  static Result<ChildProcess> ForkWithReportPipe(UniqueFd& read_end, UniqueFd& write_end,
                                                 const std::function<void()>& in_child);
  void DrainReport();
  // Sends `signal` by pidfd, else by pid (callers check running()).
  void Signal(int signal);
  // Marks the child reaped: `status` from waitpid, or ECHILD.
  ChildExit Reaped(int status, bool reaped_elsewhere);
  void Reset();

  pid_t pid_ = -1;
  UniqueFd report_fd_;
  UniqueFd pidfd_;  // none where the kernel has no pidfd_open
  // The child was reaped elsewhere before its pidfd could be opened: its
  // pid may be another process's, so it is never signalled.
  bool reaped_before_pidfd_ = false;
  bool reaped_ = false;
  std::string transcript_;
};

// What an execve after fork needs, built before the fork: in the child of a
// threaded process only async-signal-safe calls are allowed (a lock another
// thread held, as setenv's or malloc's, stays held forever there). Neither
// copied nor moved: its pointer arrays point into its strings.
class ExecImage {
 public:
  // `argv`, and this process's environment with each of `set` in place of
  // any variable of that name (as setenv would; of two pairs with one name
  // the later wins) and each of `unset` removed.
  ExecImage(std::vector<std::string> argv, const std::vector<std::pair<std::string, std::string>>& set,
            const std::vector<std::string>& unset = {});
  ExecImage(const ExecImage&) = delete;
  ExecImage& operator=(const ExecImage&) = delete;

  // In the child: execs `path` with them. Where that fails it writes
  // "<what> failed with errno N" to `report_fd` and exits 127 (async-signal-
  // safe calls only).
  [[noreturn]] void Exec(const char* path, int report_fd, const char* what);

 private:
  std::vector<std::string> argv_text_, env_text_;
  std::vector<char*> argv_, envp_;
};

// Describes the exception being handled (call it inside a catch block):
// "<type>: <what()>" for a std::exception ("std::bad_alloc: std::bad_alloc"),
// else "<type>" (the demangled type of whatever was thrown).
std::string DescribeCurrentException();

// Sends text to the parent's transcript (child side; no-op without a parent).
void ReportToParent(std::string_view text);

// Returns the path of the running binary (/proc/self/exe).
Result<std::string> SelfExecutable();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_PROCESS_PROCESS_H_
