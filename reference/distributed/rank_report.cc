// Implements the rank side of the report protocol. Every file is written
// with WriteFileAtomically (a temporary file renamed into place): the
// launcher polls for these names and reads a file as soon as it appears, so
// it must never see half of one. No fsync: only another process reads them,
// and the fault tests time the marks.
#include "reference/distributed/rank_report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "reference/base/atomic_file.h"
#include "reference/base/parse_int.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

// The start time tells the launcher whether the process it later finds at
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

// RankFilePath of this rank's report or mark; "" outside a job.
std::string OwnFilePath(const std::string& mark) {
  const char* dir = std::getenv(kMpiReportDirEnv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const std::optional<int> index = rank != nullptr ? ParseWholeNonNegative<int>(rank) : std::nullopt;
  if (dir == nullptr || !index) return "";
  return RankFilePath(dir, *index, mark);
}

}  // namespace

std::string RankFilePath(const std::string& dir, int rank, const std::string& mark) {
  return dir + "/rank-" + std::to_string(rank) + (mark.empty() ? "" : ".mark-" + mark);
}

bool ReadRankFile(const std::string& path, ProcessRef* process, std::string* text) {
  std::ifstream in(path);
  ProcessRef read;
  if (!(in >> read.pid >> read.start_ticks)) return false;  // `process` untouched
  *process = read;
  in.ignore(1);
  std::stringstream rest;
  rest << in.rdbuf();
  if (text != nullptr) *text = rest.str();
  return true;
}

void ReportFromRank(const std::string& text) {
  const std::string path = OwnFilePath("");
  if (!path.empty()) WriteReportFile(path, text);
}

void MarkFromRank(const std::string& mark) {
  const std::string path = OwnFilePath(mark);
  if (!path.empty()) WriteReportFile(path, mark);
}

}  // namespace faultline
