// The documented symptoms of F7 (PyTorch PR 3474, hardened by PR 11985).
// Before PR 3474, a data-loader worker killed by the kernel (the OOM killer:
// SIGKILL) left the trainer blocked forever in data_queue.get(): no error,
// no exit. The harness proves the hang — the trainer is still blocked past a
// deadline although the only process that could answer is dead — and reports
// it under the name "Hang". After PR 3474 the trainer raises PyTorch's
// RuntimeError naming the worker.
#ifndef FAULTLINE_REPRO_F7_SIGNATURE_H_
#define FAULTLINE_REPRO_F7_SIGNATURE_H_

#include <sys/types.h>

#include <chrono>
#include <string>

#include "repro/registry.h"

namespace faultline {
namespace repro {

inline constexpr char kF7HangName[] = "Hang";
// How long the legacy trainer must stay blocked, with worker 1 dead, before
// the harness calls it a hang. The outcome does not depend on it: minibatch 1
// can never arrive once worker 1 is dead; the deadline only bounds the wait.
inline constexpr std::chrono::milliseconds kF7HangDeadline{1500};
inline constexpr char kF7HangMessage[] = "the trainer is blocked in data_queue.get() waiting for minibatch 1";

// The whole message; the time blocked and the dead worker's pid vary.
inline const Signature kF7LegacyHang{
    kF7HangName, 0,
    Pattern(Quote(kF7HangMessage) +
            R"(: still blocked after \d+ ms although worker 1 \(pid \d+\) was killed by signal 9; nothing reports )"
            R"(the dead worker, and the queue never ends because every process holds its write end)"),
    ProcessWithPid("main process"), "data_queue.get"};

// PyTorch's text after PR 3474 (torch/csrc/DataLoader.cpp), for a worker
// that died by `signal`: "DataLoader worker (pid 4242) is killed by signal:
// Killed." (strsignal's name of the signal).
std::string KilledWorkerMessage(pid_t pid, int signal);
// PyTorch's text when `timeout` seconds pass without a result (PR 3474's
// timeout option): "DataLoader timed out after 1 seconds".
std::string TimedOutMessage(int seconds);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F7_SIGNATURE_H_
