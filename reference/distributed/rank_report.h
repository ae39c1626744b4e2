// Provides RunMpiJob's report protocol, both sides of its file format: a
// rank marks how far it got (MarkFromRank) and leaves its final outcome
// (ReportFromRank) as files in the job's report folder, which RunMpiJob
// (mpi_launcher.h) reads (RankFilePath, ReadRankFile). The rank's two are
// no-ops in a process that RunMpiJob did not start.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_

#include <string>

#include "reference/process/process_ref.h"

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

// The launcher's side. Each file holds "<pid> <start ticks>\n<text>": the
// rank's process (ProcessRef), then its report or the mark's name.
//
// The file in the job's report folder `dir` of `rank`'s report, or of its
// mark `mark` when one is given.
std::string RankFilePath(const std::string& dir, int rank, const std::string& mark = "");
// Reads a report or mark file; false when it is not there (yet) or malformed.
bool ReadRankFile(const std::string& path, ProcessRef* process, std::string* text);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_RANK_REPORT_H_
