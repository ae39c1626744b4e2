// Implements child processes over fork/execve, a pipe per child for its
// transcript, and waitpid. Children get PR_SET_PDEATHSIG so that a parent
// that dies never leaves them running.
#include "reference/process/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cxxabi.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>

#include "reference/base/fd_io.h"
#include "reference/base/parse_int.h"
#include "reference/process/child_registry.h"

extern char** environ;

namespace faultline {
namespace {

constexpr char kReportFdEnv[] = "FAULTLINE_REPORT_FD";
// The descriptors a spawned child inherits besides the report pipe
// (SpawnOptions::keep_fds), comma-separated.
constexpr char kKeptFdsEnv[] = "FAULTLINE_KEPT_FDS";

// The write end of the pipe to the parent: set directly in a forked child,
// read from FAULTLINE_REPORT_FD in a spawned one.
int g_report_fd = -2;  // -2: not looked up yet

// A spawned child takes what its parent handed it across the exec, once:
// the report pipe's descriptor from FAULTLINE_REPORT_FD, and the
// descriptors of FAULTLINE_KEPT_FDS. Both variables are removed and the
// descriptors made close-on-exec again, so that nothing this child
// execs (a grandchild of the same binary would take the variable as its
// own channel and write into this child's parent's transcript) inherits
// them; its own children get their own channel (Spawn, Fork).
int ReportFd() {
  if (g_report_fd == -2) {
    // Anything but a descriptor number (atoi read garbage as 0, stdin)
    // means there is no report channel.
    const char* text = std::getenv(kReportFdEnv);
    const std::optional<int> fd = ParseWholeNonNegative<int>(text != nullptr ? text : "");
    g_report_fd = fd ? *fd : -1;
    if (g_report_fd >= 0) fcntl(g_report_fd, F_SETFD, FD_CLOEXEC);
    unsetenv(kReportFdEnv);
    if (const char* kept = std::getenv(kKeptFdsEnv)) {
      const std::string_view list = kept;
      for (size_t start = 0; start < list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (const std::optional<int> kept_fd = ParseWholeNonNegative<int>(list.substr(start, comma - start))) {
          fcntl(*kept_fd, F_SETFD, FD_CLOEXEC);
        }
        start = comma + 1;
      }
      unsetenv(kKeptFdsEnv);
    }
  }
  return g_report_fd;
}

// At the start of every process of a binary that links this file (before
// main, so before a spawned child's entry point can exec anything).
[[maybe_unused]] const int g_adopted_report_fd = ReportFd();

// A spawned child's entry point that lets an exception escape reports it
// as a forked body's does (MaybeRunRegisteredChild then exits with 70).
[[maybe_unused]] const bool g_reports_uncaught_in_spawned_child = [] {
  SetUncaughtInChildHandler([](const std::string& entry) {
    try {
      ReportToParent("uncaught exception " + DescribeCurrentException() + " in spawned child entry point '" + entry +
                     "'");
    } catch (...) {  // no memory to describe it
      ReportToParent("uncaught exception in a spawned child entry point (no memory to describe it)");
    }
  });
  return true;
}();

Status ErrnoError(const char* what) { return InternalError(std::string(what) + " failed: " + std::strerror(errno)); }

// Makes the child die with its parent (checked after the call against a
// parent that exited in between).
void DieWithParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(137);
}

}  // namespace

const char* StartMethodName(StartMethod method) { return method == StartMethod::kFork ? "fork" : "spawn"; }

Result<StartMethod> ParseStartMethod(std::string_view text, std::string_view what) {
  if (text == "fork") return StartMethod::kFork;
  if (text == "spawn") return StartMethod::kSpawn;
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) + "'; expected fork or spawn");
}

std::string ChildExit::How() const {
  switch (end) {
    case ChildEnd::kExited: return "exited with code " + std::to_string(exit_code);
    case ChildEnd::kSignaled:
    case ChildEnd::kTimedOut: return "was killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
    case ChildEnd::kReapedElsewhere: return "ended";
  }
  return "ended";
}

std::string ChildExit::Describe() const {
  const std::string pid_text = "pid " + std::to_string(pid);
  switch (end) {
    case ChildEnd::kTimedOut: return pid_text + " did not finish in time and was killed";
    case ChildEnd::kReapedElsewhere: return pid_text + " ended; its exit status was reaped elsewhere (waitpid: ECHILD)";
    case ChildEnd::kExited:
    case ChildEnd::kSignaled: return pid_text + " " + How();
  }
  return pid_text + " " + How();
}

std::string DescribeCurrentException() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "no exception";
  int demangled_status = 0;
  char* demangled = abi::__cxa_demangle(type->name(), nullptr, nullptr, &demangled_status);
  std::string text = demangled_status == 0 && demangled != nullptr ? demangled : type->name();
  std::free(demangled);
  try {
    throw;
  } catch (const std::exception& e) {
    text += std::string(": ") + e.what();
  } catch (...) {
  }
  return text;
}

void ReportToParent(std::string_view text) {
  const int fd = ReportFd();
  // A parent that is gone or closed its end has nobody to tell.
  if (fd >= 0) (void)WriteAll(fd, text);
}

Result<std::string> SelfExecutable() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n < 0) return ErrnoError("readlink(/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

Result<ChildProcess> ChildProcess::ForkWithReportPipe(UniqueFd& read_end, UniqueFd& write_end,
                                                      const std::function<void()>& in_child) {
  std::fflush(nullptr);  // do not let the child flush the parent's buffers again
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork");
  if (pid == 0) {
    DieWithParent(parent);
    in_child();
    _exit(127);  // in_child ends the process itself
  }
  write_end.reset();
  fcntl(read_end.get(), F_SETFL, O_NONBLOCK);
  // Opened before anything could reap the child, unless SIGCHLD is
  // ignored and the child ended (and its pid was reused) in these few
  // instructions. Close-on-exec by the kernel.
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  // ESRCH: the child has ended and been reaped already (SIGCHLD ignored):
  // its pid may be another process's by now, so it is never signalled.
  // Without pidfds (ENOSYS), signals go by pid.
  const bool reaped_before_pidfd = !pidfd.valid() && errno == ESRCH;
  return ChildProcess(pid, std::move(read_end), std::move(pidfd), reaped_before_pidfd);
}

Result<ChildProcess> ChildProcess::Fork(std::function<int()> body) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  return ForkWithReportPipe(read_end, write_end, [&] {
    read_end.reset();
    // Its channel is the new pipe; the one this process reports on (when
    // it is a spawned child) is not the forked child's to hold open.
    UniqueFd(g_report_fd).reset();  // closed now; nothing to close when there is none (-1)
    g_report_fd = write_end.release();
    int code = kUncaughtExceptionExitCode;
    try {
      code = body();
    } catch (abi::__forced_unwind&) {
      throw;  // pthread_exit or cancellation: glibc aborts if it is swallowed
    } catch (...) {
      // Caught here, the exception cannot reach the frames above, which are
      // the parent's (a loader's destructor would kill the child's
      // siblings, a test framework would run the next test in the child).
      try {
        ReportToParent("uncaught exception " + DescribeCurrentException() + " in the forked child");
      } catch (...) {  // no memory to describe it
        ReportToParent("uncaught exception in the forked child (no memory to describe it)");
      }
    }
    std::fflush(nullptr);
    _exit(code);  // skip the parent's atexit handlers and static destructors
  });
}

Result<ChildProcess> ChildProcess::Spawn(const std::string& entry, const std::vector<std::string>& args,
                                         const SpawnOptions& options) {
  if (!HasChildEntry(entry)) {
    return InvalidArgumentError("cannot spawn a child at entry point '" + entry +
                                "': this binary registers none of that name (FL_REGISTER_CHILD)");
  }
  FL_ASSIGN_OR_RETURN(std::string exe, SelfExecutable());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  UniqueFd read_end(fds[0]), write_end(fds[1]);

  std::vector<std::string> argv = {exe, std::string(kChildFlag) + entry};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::pair<std::string, std::string>> set = options.env;
  set.emplace_back(kReportFdEnv, std::to_string(write_end.get()));
  std::vector<std::string> unset;
  if (options.keep_fds.empty()) {
    unset.push_back(kKeptFdsEnv);
  } else {
    std::string kept;
    for (int fd : options.keep_fds) kept += (kept.empty() ? "" : ",") + std::to_string(fd);
    set.emplace_back(kKeptFdsEnv, kept);
  }
  ExecImage image(std::move(argv), set, unset);

  // The child execs or _exits: its copies of read_end and write_end are
  // never destroyed there, so the write end crosses the exec open.
  return ForkWithReportPipe(read_end, write_end, [&] {
    fcntl(write_end.get(), F_SETFD, 0);  // the report pipe survives exec
    for (int fd : options.keep_fds) fcntl(fd, F_SETFD, 0);
    // Through /proc/self/exe, the running file, which stays executable when
    // a rebuild replaces or deletes its path mid-run (argv[0] keeps the path).
    image.Exec("/proc/self/exe", write_end.get(), "faultline: execve of the spawned child");
  });
}

ExecImage::ExecImage(std::vector<std::string> argv, const std::vector<std::pair<std::string, std::string>>& set,
                     const std::vector<std::string>& unset)
    : argv_text_(std::move(argv)) {
  auto named = [](const std::string& entry, const std::string& name) {
    return entry.size() > name.size() && entry[name.size()] == '=' && entry.compare(0, name.size(), name) == 0;
  };
  for (char** e = environ; *e != nullptr; ++e) env_text_.emplace_back(*e);
  auto remove = [&](const std::string& name) {
    env_text_.erase(std::remove_if(env_text_.begin(), env_text_.end(),
                                   [&](const std::string& entry) { return named(entry, name); }),
                    env_text_.end());
  };
  for (const std::string& name : unset) remove(name);
  for (const auto& [name, value] : set) {
    remove(name);
    env_text_.push_back(name + "=" + value);
  }
  for (std::string& a : argv_text_) argv_.push_back(a.data());
  argv_.push_back(nullptr);
  for (std::string& e : env_text_) envp_.push_back(e.data());
  envp_.push_back(nullptr);
}

void ExecImage::Exec(const char* path, int report_fd, const char* what) {
  execve(path, argv_.data(), envp_.data());
  // Only async-signal-safe calls here: errno by hand, no strerror.
  char tail[] = " failed with errno 000\n";
  const int code = errno;
  tail[sizeof(tail) - 5] = static_cast<char>('0' + code / 100 % 10);
  tail[sizeof(tail) - 4] = static_cast<char>('0' + code / 10 % 10);
  tail[sizeof(tail) - 3] = static_cast<char>('0' + code % 10);
  (void)!write(report_fd, what, std::strlen(what));
  (void)!write(report_fd, tail, sizeof(tail) - 1);
  _exit(127);
}

Result<ChildProcess> ChildProcess::Start(StartMethod method, std::function<int()> body, const std::string& entry,
                                         const std::vector<std::string>& args, const SpawnOptions& options) {
  if (method == StartMethod::kFork) return Fork(std::move(body));
  return Spawn(entry, args, options);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    Reset();
    pid_ = other.pid_;
    report_fd_ = std::move(other.report_fd_);
    pidfd_ = std::move(other.pidfd_);
    reaped_before_pidfd_ = other.reaped_before_pidfd_;
    reaped_ = other.reaped_;
    transcript_ = std::move(other.transcript_);
    other.pid_ = -1;
    other.reaped_before_pidfd_ = false;
  }
  return *this;
}

ChildProcess::~ChildProcess() { Reset(); }

void ChildProcess::Reset() {
  if (running()) {
    Signal(SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  report_fd_.reset();
  pidfd_.reset();
  pid_ = -1;
  reaped_before_pidfd_ = false;
  reaped_ = false;
}

void ChildProcess::Signal(int signal) {
  if (reaped_before_pidfd_) return;
  if (pidfd_.valid()) {
    (void)syscall(SYS_pidfd_send_signal, pidfd_.get(), signal, nullptr, 0);  // ESRCH once it has ended
  } else {
    kill(pid_, signal);
  }
}

void ChildProcess::Kill(int signal) {
  if (running()) Signal(signal);
}

ChildExit ChildProcess::Reaped(int status, bool reaped_elsewhere) {
  reaped_ = true;
  DrainReport();
  ChildExit result;
  result.pid = pid_;
  if (reaped_elsewhere) {
    result.end = ChildEnd::kReapedElsewhere;
  } else if (WIFEXITED(status)) {
    result.end = ChildEnd::kExited;
    result.exit_code = WEXITSTATUS(status);
  } else {
    result.end = ChildEnd::kSignaled;
    result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
  result.transcript = transcript_;
  return result;
}

void ChildProcess::DrainReport() {
  if (!report_fd_.valid()) return;
  char buffer[4096];
  for (;;) {
    ssize_t n = read(report_fd_.get(), buffer, sizeof(buffer));
    if (n > 0) {
      transcript_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN (nothing yet) or EOF
  }
}

Result<ChildExit> ChildProcess::TryWait() {
  if (pid_ <= 0) return FailedPreconditionError("TryWait: no child process");
  DrainReport();
  ChildExit result;
  result.pid = pid_;
  if (reaped_) return InternalError("TryWait: child " + std::to_string(pid_) + " was already collected");
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  // Not our child any more: it ended and was reaped by the kernel
  // (SIGCHLD ignored) or by another waiter. Its pid may be reused now.
  if (r < 0 && errno == ECHILD) return Reaped(0, /*reaped_elsewhere=*/true);
  if (r < 0) {
    const int error = errno;
    return InternalError("waitpid for pid " + std::to_string(pid_) + " failed: " + std::strerror(error));
  }
  if (r == 0) return result;  // still running: running() stays true
  return Reaped(status, /*reaped_elsewhere=*/false);
}

Result<ChildExit> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (;;) {
    FL_ASSIGN_OR_RETURN(ChildExit result, TryWait());
    if (!running()) return result;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::milliseconds(10)) pause *= 2;
  }
  Signal(SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ChildExit result = Reaped(status, /*reaped_elsewhere=*/false);
  result.end = ChildEnd::kTimedOut;
  result.exit_code = 0;
  result.signal = SIGKILL;
  return result;
}

Status ChildProcess::WaitForTranscript(std::string_view text, std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return FailedPreconditionError("WaitForTranscript: no child process");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto missing = [&](const std::string& why) {
    return UnavailableError("child pid " + std::to_string(pid_) + " " + why + " without reporting '" +
                            std::string(text) + "'; its transcript so far: '" + transcript_ + "'");
  };
  for (;;) {
    DrainReport();
    if (transcript_.find(text) != std::string::npos) return OkStatus();
    if (!report_fd_.valid()) return missing("has no report pipe");
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return missing("ran for " + std::to_string(timeout.count()) + " ms");
    pollfd pfd{report_fd_.get(), POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return ErrnoError("poll");
    if (ready > 0 && (pfd.revents & POLLIN) == 0 && (pfd.revents & (POLLHUP | POLLERR)) != 0) {
      DrainReport();
      if (transcript_.find(text) != std::string::npos) return OkStatus();
      return missing("closed its report pipe");
    }
  }
}

}  // namespace faultline
