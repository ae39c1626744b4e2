// Provides RunMpiJob: runs a registered child entry point of this binary as
// N MPI ranks under a real `mpirun`, waits for it with a timeout, and collects
// what each rank reported (rank_report.h). Tests and the benchmark use it so
// that `bazel test` and `bazel run` need no wrapper script.
//
// The ranks run on this machine (shared memory between them), or spread over
// network-namespace hosts (netns_hosts.h): then mpirun runs on host 0 and
// starts each other host's daemon through this same binary standing in for
// ssh (the "mpi_netns_agent" child entry, which enters that host's
// namespaces and runs the daemon's command line with /bin/sh), and ranks
// talk over TCP only: `--mca pml ob1 --mca btl self,tcp --mca osc pt2pt`,
// with the TCP and out-of-band traffic confined to the hosts' subnet.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_LAUNCHER_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_LAUNCHER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/status.h"
#include "reference/distributed/rank_report.h"
#include "reference/distributed/testing/netns_hosts.h"
#include "reference/process/process_ref.h"

namespace faultline {

class RunningMpiJob;

struct MpiJobOptions {
  int ranks = 4;
  // mpirun and every rank are killed when the job runs longer.
  std::chrono::seconds timeout{300};
  // Keeps the other ranks running when one dies (mpirun --enable-recovery),
  // so that they meet the failure themselves instead of being killed.
  // Across hosts, OpenMPI 4.1's mpirun then never exits after a rank
  // failed (nor do its daemons): once every rank has ended (each one that
  // marked "started" or "joined" and is gone, and each that reported without
  // a mark: a rank killed inside MPI_Init or while joining counts), RunMpiJob
  // gives mpirun 250 ms and then kills it (SIGKILL; each
  // remote daemon sees its connection to mpirun close and exits by itself),
  // and says so in MpiJob::mpirun_terminated. On any layout, when a rank
  // ended without finishing MPI_Init (no "initialized" mark; it may have
  // reported why) and every rank left is inside MPI_Init too (which waits
  // for every rank, with no timeout), still 5 s later, RunMpiJob ends those
  // ranks and mpirun
  // (mpirun_terminated; each such rank is named in MpiJob::vanished).
  bool keep_survivors = false;
  // Extra environment for every rank.
  std::vector<std::pair<std::string, std::string>> env;
  // Spreads the ranks over these hosts: ranks_per_host[k] ranks on host k,
  // in rank order (the sum must be `ranks`). Null: every rank on this machine.
  const NetnsHosts* hosts = nullptr;
  std::vector<int> ranks_per_host;
  // More mpirun arguments, put before the program (e.g. "--mca", "btl_base_verbose", "100").
  std::vector<std::string> mpirun_args;
  // Runs on its own thread while the job runs, e.g. to kill a rank or take a
  // host's link down once the ranks reached a mark. RunMpiJob returns after it.
  std::function<void(RunningMpiJob&)> during;
  // When it becomes true (a CLI's SIGTERM or SIGINT handler sets it), the
  // launcher ends the job as at its timeout, within about 10 ms, removes
  // the job's folders and returns with MpiJob::stopped: a signal that ended
  // the caller at once would leave them behind.
  const std::atomic<bool>* stop = nullptr;
};

// What one rank wrote with ReportFromRank: "ok" or its error, and its pid.
struct RankReport {
  bool present = false;
  pid_t pid = 0;
  std::string text;
};

struct MpiJob {
  int exit_code = -1;      // mpirun's exit code (-1 when killed)
  bool timed_out = false;  // the launcher killed the job
  bool stopped = false;    // ... because MpiJobOptions::stop became true
  // mpirun outlived every rank (keep_survivors across hosts), or the ranks
  // left could never leave MPI_Init, and the launcher ended it.
  bool mpirun_terminated = false;
  std::string output;               // mpirun's and the ranks' stdout and stderr
  std::vector<RankReport> reports;  // by rank
  std::vector<pid_t> started_pids;  // by rank, from the "started" mark, before MPI_Init (0: never started)
  std::vector<pid_t> joined_pids;   // by rank, from the "joined" mark (0: never joined)
  // Each rank that started and ended without a report (killed, or crashed),
  // e.g. "rank 2 (pid 4242) ended without a report, before it joined
  // (mpirun: it exited on signal 9 (Killed))"; mpirun's words where it said.
  std::vector<std::string> vanished;
  // Ranks that still ran after mpirun was gone (then killed): should be none.
  std::vector<pid_t> leftover_pids;
  // Describes everything above, for a test failure message.
  std::string Describe() const;
};

// A job while it runs, for MpiJobOptions::during.
class RunningMpiJob {
 public:
  RunningMpiJob(std::string dir, int ranks) : dir_(std::move(dir)), ranks_(ranks) {}
  // Waits until `rank` marked `mark` (MarkFromRank) and returns its pid;
  // fails when the job ended first or after `timeout`.
  Result<pid_t> WaitForMark(int rank, const std::string& mark, std::chrono::milliseconds timeout) const;
  // The same, returning the rank's process as its mark names it (pid and
  // start time), which stays true once its pid is another process's.
  Result<ProcessRef> WaitForMarkedProcess(int rank, const std::string& mark, std::chrono::milliseconds timeout) const;
  // Whether `rank` has reported (ReportFromRank) by now.
  bool Reported(int rank) const;
  // Waits until `rank` reported and returns its text.
  Result<std::string> WaitForReport(int rank, std::chrono::milliseconds timeout) const;
  int ranks() const { return ranks_; }
  // Whether mpirun has ended (RunMpiJob then waits for `during` to return).
  bool ended() const { return ended_; }
  void set_ended() { ended_ = true; }

 private:
  // Waits for `rank`'s mark `mark`, or its report when `mark` is empty.
  Result<std::pair<ProcessRef, std::string>> WaitForFile(int rank, const std::string& mark, const std::string& what,
                                                         std::chrono::milliseconds timeout) const;
  std::string dir_;
  int ranks_;
  std::atomic<bool> ended_{false};
};

// Runs `--faultline-child=<entry> args...` of this binary as options.ranks ranks.
Result<MpiJob> RunMpiJob(const std::string& entry, const std::vector<std::string>& args,
                         const MpiJobOptions& options = {});

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_LAUNCHER_H_
