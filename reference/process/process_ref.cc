// Implements ProcessRef over /proc/PID/stat and ProcessHandle over pidfds.
#include "reference/process/process_ref.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace faultline {
namespace {

struct ProcessStat {
  char state = '?';
  uint64_t start_ticks = 0;
};

// Reads the state letter (field 3) and the start time (field 22) of /proc/PID/stat.
std::optional<ProcessStat> ReadStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(file, line)) return std::nullopt;
  // The fields follow the parenthesized command name, which may hold spaces and parentheses.
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(paren + 1));
  ProcessStat stat;
  std::string skipped;
  if (!(fields >> stat.state)) return std::nullopt;
  for (int field = 4; field < 22; ++field) {
    if (!(fields >> skipped)) return std::nullopt;
  }
  if (!(fields >> stat.start_ticks)) return std::nullopt;
  return stat;
}

bool Alive(const ProcessStat& stat) { return stat.state != 'Z' && stat.state != 'X'; }

}  // namespace

std::optional<ProcessRef> ProcessRefOf(pid_t pid) {
  const std::optional<ProcessStat> stat = ReadStat(pid);
  if (!stat) return std::nullopt;
  return ProcessRef{pid, stat->start_ticks};
}

ProcessRef SelfProcessRef() { return ProcessRefOf(getpid()).value_or(ProcessRef{getpid(), 0}); }

bool ProcessRunning(const ProcessRef& ref) {
  const std::optional<ProcessStat> stat = ReadStat(ref.pid);
  return stat && stat->start_ticks == ref.start_ticks && Alive(*stat);
}

bool ProcessRunning(pid_t pid) {
  const std::optional<ProcessStat> stat = ReadStat(pid);
  return stat && Alive(*stat);
}

ProcessHandle ProcessHandle::Open(const ProcessRef& ref) {
  if (ref.pid <= 0) return ProcessHandle(ref, -1, true);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, ref.pid, 0));
  if (pidfd < 0) return ProcessHandle(ref, -1, errno != ENOSYS || !ProcessRunning(ref));
  // The pidfd holds whatever process had the pid when it was opened. That
  // was ref's process if the pid's process now is: ref's process started
  // before the open, so it still held its pid then.
  const std::optional<ProcessRef> now = ProcessRefOf(ref.pid);
  if (!now || now->start_ticks != ref.start_ticks) {
    close(pidfd);
    return ProcessHandle(ref, -1, true);
  }
  return ProcessHandle(ref, pidfd, false);
}

ProcessHandle::ProcessHandle(ProcessHandle&& other) noexcept
    : ref_(other.ref_), pidfd_(other.pidfd_), ended_(other.ended_) {
  other.pidfd_ = -1;
  other.ended_ = true;
}

ProcessHandle& ProcessHandle::operator=(ProcessHandle&& other) noexcept {
  if (this != &other) {
    if (pidfd_ >= 0) close(pidfd_);
    ref_ = other.ref_;
    pidfd_ = other.pidfd_;
    ended_ = other.ended_;
    other.pidfd_ = -1;
    other.ended_ = true;
  }
  return *this;
}

ProcessHandle::~ProcessHandle() {
  if (pidfd_ >= 0) close(pidfd_);
}

bool ProcessHandle::EndsBy(std::chrono::steady_clock::time_point deadline) {
  while (!ended_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    if (pidfd_ < 0) {  // no pidfds: look at the process every 10 ms
      ended_ = !ProcessRunning(ref_);
      if (ended_ || timeout_ms == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(timeout_ms, 10)));
      continue;
    }
    pollfd pfd{pidfd_, POLLIN, 0};  // readable once the process has exited
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    ended_ = ready > 0;
    break;
  }
  return ended_;
}

void ProcessHandle::Signal(int signal) {
  if (ended_) return;
  if (pidfd_ >= 0) {
    (void)syscall(SYS_pidfd_send_signal, pidfd_, signal, nullptr, 0);  // ESRCH once it has ended
  } else if (ProcessRunning(ref_)) {
    kill(ref_.pid, signal);
  }
}

}  // namespace faultline
