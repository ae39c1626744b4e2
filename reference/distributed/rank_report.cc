// Implements the rank side of the report protocol. Every file is written
// with WriteFileAtomically (a temporary file renamed into place): the
// launcher polls for these names and reads a file as soon as it appears, so
// it must never see half of one. No fsync: only another process reads them,
// and the fault tests time the marks.
#include "reference/distributed/rank_report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "reference/base/atomic_file.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

// "<pid> <start ticks>\n<text>", as the launcher's ReadRankFile reads it:
// the start time tells the launcher whether the process it later finds at
// that pid is still this rank (ProcessRef).
void WriteReportFile(const std::string& path, const std::string& text) {
  const ProcessRef self = SelfProcessRef();
  const Status written = WriteFileAtomically(
      path, {std::to_string(self.pid), " ", std::to_string(self.start_ticks), "\n", text}, FileDurability::kVisible);
  // The callers cannot act on it: the launcher will find no report (or no
  // mark). Say why on stderr, which reaches the job's output that
  // MpiJob::Describe shows next to the missing report.
  if (!written.ok()) std::fprintf(stderr, "rank report: %s\n", written.ToString().c_str());
}

// "DIR/rank-N", or "" outside a job.
std::string RankPath() {
  const char* dir = std::getenv(kMpiReportDirEnv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (dir == nullptr || rank == nullptr) return "";
  return std::string(dir) + "/rank-" + rank;
}

}  // namespace

void ReportFromRank(const std::string& text) {
  const std::string path = RankPath();
  if (!path.empty()) WriteReportFile(path, text);
}

void MarkFromRank(const std::string& mark) {
  const std::string path = RankPath();
  if (!path.empty()) WriteReportFile(path + ".mark-" + mark, mark);
}

}  // namespace faultline
