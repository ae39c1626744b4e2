// Provides ProcessRef and ProcessHandle: one process of this host named so
// that it cannot be mistaken for another, for processes that are not this
// process's children (an MPI rank is mpirun's child; its launcher learns its
// pid from a file). A pid alone does not name one process: once a process is
// reaped, the kernel gives its pid to a later one (pid_max is 32768 on this
// project's machines, so pids come round within minutes of a test run), and
// a launcher that signals a rank by pid after it ended kills a stranger.
#ifndef FAULTLINE_REFERENCE_PROCESS_PROCESS_REF_H_
#define FAULTLINE_REFERENCE_PROCESS_PROCESS_REF_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <utility>

#include "reference/base/unique_fd.h"

namespace faultline {

// A process by its pid and the time it started (/proc/PID/stat field 22,
// clock ticks after boot): two processes never share both. A start time of
// 0 means unknown (a process that could not read its own /proc): the pid
// alone names it then.
struct ProcessRef {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
};

// The process that has pid `pid` now (a zombie included); nullopt when there is none.
std::optional<ProcessRef> ProcessRefOf(pid_t pid);
// This process (start time 0 where /proc cannot be read).
ProcessRef SelfProcessRef();

// Whether the process `ref` names is running: false when it is a zombie or
// gone, and when its pid now belongs to another process; true when /proc
// cannot be read (no descriptor left), as nothing shows it has ended.
bool ProcessRunning(const ProcessRef& ref);

// A pidfd on the process a ProcessRef names, checked to be that process when
// it is opened; from then on it cannot come to mean another process. Empty
// (ended() from the start) when the process had already ended or its pid
// was another's. Where no pidfd can be opened (Linux before 5.3, no
// descriptor left) it checks the ProcessRef again before each signal and
// while it waits.
class ProcessHandle {
 public:
  static ProcessHandle Open(const ProcessRef& ref);
  ProcessHandle(ProcessHandle&& other) noexcept;
  ProcessHandle& operator=(ProcessHandle&& other) noexcept;
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  ~ProcessHandle() = default;

  // Waits until the process has ended (exited; a zombie has) or `deadline`
  // passed; returns whether it has ended.
  bool EndsBy(std::chrono::steady_clock::time_point deadline);
  bool ended() { return EndsBy(std::chrono::steady_clock::time_point{}); }
  // Sends `signal` to the process, and to no other: nothing once it ended.
  void Signal(int signal);

 private:
  ProcessHandle(const ProcessRef& ref, UniqueFd pidfd, bool ended)
      : ref_(ref), pidfd_(std::move(pidfd)), ended_(ended) {}
  ProcessRef ref_;
  UniqueFd pidfd_;  // none: ended, or no pidfds (then ref_ is checked each time)
  bool ended_ = false;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_PROCESS_PROCESS_REF_H_
