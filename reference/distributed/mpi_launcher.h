// Provides RunMpiJob: runs a registered child entry point of this binary as
// N MPI ranks under a real `mpirun`, waits for it with a timeout, and collects
// what each rank reported. Tests and the benchmark use it so that
// `bazel test` and `bazel run` need no wrapper script.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_MPI_LAUNCHER_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_MPI_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/status.h"

namespace faultline {

struct MpiJobOptions {
  int ranks = 4;
  // mpirun and every rank are killed when the job runs longer.
  std::chrono::seconds timeout{300};
  // Keeps the other ranks running when one dies (mpirun --enable-recovery),
  // so that they meet the failure themselves instead of being killed.
  bool keep_survivors = false;
  // Extra environment for every rank.
  std::vector<std::pair<std::string, std::string>> env;
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
  std::string output;      // mpirun's and the ranks' stdout and stderr
  std::vector<RankReport> reports;  // by rank
  // Ranks that still ran after mpirun was gone (then killed): should be none.
  std::vector<pid_t> leftover_pids;
};

// Runs `--faultline-child=<entry> args...` of this binary as options.ranks ranks.
Result<MpiJob> RunMpiJob(const std::string& entry, const std::vector<std::string>& args,
                         const MpiJobOptions& options = {});

// Writes this rank's report for RunMpiJob (no-op outside a job): `text` is
// "ok" or what went wrong. The rank comes from OMPI_COMM_WORLD_RANK, so a rank
// whose MPI setup failed can still report.
void ReportFromRank(const std::string& text);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_MPI_LAUNCHER_H_
