// Provides what tests of child processes share: whether a child is still
// unreaped, asked without disturbing it.
#ifndef FAULTLINE_REFERENCE_PROCESS_PROCESS_TEST_SUPPORT_H_
#define FAULTLINE_REFERENCE_PROCESS_PROCESS_TEST_SUPPORT_H_

#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>

namespace faultline {

// Whether `pid`, a child of this process, has not been reaped: it runs,
// or it is a zombie. Asked with waitid(WNOWAIT), which leaves it as it is;
// once it is reaped waitid says ECHILD whatever process has the pid by then
// (kill(pid, 0) would count a process that reused the pid).
inline bool Unreaped(pid_t pid) {
  siginfo_t info{};
  int r;
  while ((r = waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT)) != 0 && errno == EINTR) {
  }
  return r == 0 || errno != ECHILD;  // any other error: not known to be gone
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_PROCESS_PROCESS_TEST_SUPPORT_H_
