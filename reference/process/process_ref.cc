// Implements ProcessRef over /proc/PID/stat and ProcessHandle over pidfds.
#include "reference/process/process_ref.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "reference/base/unique_fd.h"

namespace faultline {
namespace {

struct ProcessStat {
  char state = '?';
  uint64_t start_ticks = 0;
};

// What /proc/PID/stat says: the process's state letter (field 3) and start
// time (field 22); nothing when no process has the pid; `unreadable` when
// the file could not be read for another reason (no descriptor left), so
// that nothing is known.
struct StatRead {
  std::optional<ProcessStat> stat;
  bool unreadable = false;
};

StatRead ReadStat(pid_t pid) {
  if (pid <= 0) return {};
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {std::nullopt, errno != ENOENT && errno != ESRCH};
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd.get(), buffer, sizeof(buffer) - 1)) < 0 && errno == EINTR) {
  }
  const int read_errno = errno;
  fd.reset();
  if (n <= 0) return {std::nullopt, n < 0 && read_errno != ESRCH};
  const std::string line(buffer, static_cast<size_t>(n));
  // The fields follow the parenthesized command name, which may hold spaces and parentheses.
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return {std::nullopt, true};
  std::istringstream fields(line.substr(paren + 1));
  ProcessStat stat;
  std::string skipped;
  if (!(fields >> stat.state)) return {std::nullopt, true};
  for (int field = 4; field < 22; ++field) {
    if (!(fields >> skipped)) return {std::nullopt, true};
  }
  if (!(fields >> stat.start_ticks)) return {std::nullopt, true};
  return {stat, false};
}

bool Alive(const ProcessStat& stat) { return stat.state != 'Z' && stat.state != 'X'; }

// Whether `stat`, of ref.pid's process now, is ref's process.
bool SameProcess(const ProcessStat& stat, const ProcessRef& ref) {
  return ref.start_ticks == 0 || stat.start_ticks == ref.start_ticks;  // 0: the pid alone
}

// Whether /proc shows `ref`'s process running; nullopt when it cannot be read.
std::optional<bool> Runs(const ProcessRef& ref) {
  const StatRead read = ReadStat(ref.pid);
  if (read.unreadable) return std::nullopt;
  return read.stat && SameProcess(*read.stat, ref) && Alive(*read.stat);
}

}  // namespace

std::optional<ProcessRef> ProcessRefOf(pid_t pid) {
  const StatRead read = ReadStat(pid);
  if (!read.stat) return std::nullopt;
  return ProcessRef{pid, read.stat->start_ticks};
}

ProcessRef SelfProcessRef() { return ProcessRefOf(getpid()).value_or(ProcessRef{getpid(), 0}); }

bool ProcessRunning(const ProcessRef& ref) { return Runs(ref).value_or(true); }

ProcessHandle ProcessHandle::Open(const ProcessRef& ref) {
  if (ref.pid <= 0) return ProcessHandle(ref, UniqueFd(), true);
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, ref.pid, 0)));
  // ESRCH: no process has the pid. Any other failure (no pidfds before
  // Linux 5.3, no descriptor left) says nothing about the process: the
  // handle then looks at it by ProcessRef each time.
  if (!pidfd.valid()) return ProcessHandle(ref, UniqueFd(), errno == ESRCH || !ProcessRunning(ref));
  // The pidfd holds whatever process had the pid when it was opened. That
  // was ref's process if the pid's process now is: ref's process started
  // before the open, so it still held its pid then.
  const StatRead now = ReadStat(ref.pid);
  if (now.stat && SameProcess(*now.stat, ref)) return ProcessHandle(ref, std::move(pidfd), false);
  pidfd.reset();
  // Unreadable (the pidfd took the last descriptor): nothing is known, so
  // the handle looks at the process by ProcessRef each time, as without pidfds.
  return ProcessHandle(ref, UniqueFd(), !now.unreadable);
}

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : ref_(other.ref_), pidfd_(std::move(other.pidfd_)), ended_(other.ended_) {
  other.ended_ = true;
}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    ref_ = other.ref_;
    pidfd_ = std::move(other.pidfd_);
    ended_ = other.ended_;
    other.ended_ = true;
  }
  return *this;
}

bool ProcessHandle::EndsBy(std::chrono::steady_clock::time_point deadline) {
  while (!ended_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    if (!pidfd_.valid()) {  // no pidfd: look at the process every 10 ms
      ended_ = !ProcessRunning(ref_);
      if (ended_ || timeout_ms == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 10)));
      continue;
    }
    pollfd pfd{pidfd_.get(), POLLIN, 0};  // readable once the process has exited
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0) {
      if (errno != EINTR) pidfd_.reset();  // poll cannot watch it: look at it in /proc instead
      continue;
    }
    ended_ = ready > 0;
    break;
  }
  return ended_;
}

void ProcessHandle::Signal(int signal) {
  if (ended_) return;
  if (pidfd_.valid()) {
    (void)syscall(SYS_pidfd_send_signal, pidfd_.get(), signal, nullptr, 0);  // ESRCH once it has ended
  } else if (Runs(ref_).value_or(false)) {                                   // only a process known to be ref_'s
    kill(ref_.pid, signal);
  }
}

}  // namespace faultline
