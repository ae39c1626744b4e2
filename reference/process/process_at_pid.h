// Provides ProcessAtPid for tests: a stand-in process started at a chosen
// pid, which is what the kernel does by itself once pids come round (a pid
// is handed out again after its process was reaped), made to happen now.
#ifndef FAULTLINE_REFERENCE_PROCESS_PROCESS_AT_PID_H_
#define FAULTLINE_REFERENCE_PROCESS_PROCESS_AT_PID_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <utility>

#include "reference/base/status.h"
#include "reference/base/unique_fd.h"

namespace faultline {

// A child of this process that waits until it is destroyed (SIGKILL, then
// reaped) or this process ends (it reads a pipe whose write end only this
// process holds). Started with clone3's set_tid (Linux 5.5), which needs
// CAP_SYS_ADMIN: where that is refused, Start fails and says so.
class ProcessAtPid {
 public:
  // Starts it at `pid` as soon as that pid is free (a process that ended is
  // reaped by its parent a moment later; until then the pid is taken), and
  // with a start time (ProcessRef::start_ticks, 10 ms ticks) other than
  // `other_than_ticks`: a process that ended within the same tick as it
  // started would otherwise share both with the stand-in.
  static Result<ProcessAtPid> Start(pid_t pid, uint64_t other_than_ticks, std::chrono::milliseconds timeout);
  ProcessAtPid(ProcessAtPid&& other) noexcept : pid_(other.pid_), lifeline_(std::move(other.lifeline_)) {
    other.pid_ = 0;
  }
  ProcessAtPid(const ProcessAtPid&) = delete;
  ProcessAtPid& operator=(const ProcessAtPid&) = delete;
  ProcessAtPid& operator=(ProcessAtPid&&) = delete;
  ~ProcessAtPid();

  pid_t pid() const { return pid_; }
  // Whether it has not ended (no signal reached it); it stays unreaped either way.
  bool Running() const;

 private:
  ProcessAtPid(pid_t pid, UniqueFd lifeline) : pid_(pid), lifeline_(std::move(lifeline)) {}
  pid_t pid_ = 0;
  UniqueFd lifeline_;  // the pipe's write end: the child ends when it closes
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_PROCESS_PROCESS_AT_PID_H_
