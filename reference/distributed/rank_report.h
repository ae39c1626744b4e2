// Provides the rank side of RunMpiJob's report protocol: a rank marks how far
// it got (MarkFromRank) and leaves its final outcome (ReportFromRank) as
// files in the job's report folder, which RunMpiJob (mpi_launcher.h) reads.
// Both are no-ops in a process that RunMpiJob did not start.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_

#include <string>

namespace faultline {

// The environment variable that names the job's report folder.
inline constexpr const char kMpiReportDirEnv[] = "FAULTLINE_MPI_REPORT_DIR";

// Writes this rank's report for RunMpiJob: `text` is "ok" or what went
// wrong. The rank comes from OMPI_COMM_WORLD_RANK, so a rank whose MPI setup
// failed can still report. Async-signal-unsafe; call it from one thread.
void ReportFromRank(const std::string& text);

// Records that this rank reached `mark` (letters, digits, '-' and '_'), with
// its pid, so that the launcher (and a test's `during` hook) can wait for it.
// MpiTransport marks "joined" once every rank has exchanged its address.
void MarkFromRank(const std::string& mark);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_
