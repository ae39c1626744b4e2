// Implements the rank side of the report protocol: write a temporary file,
// then rename it, so that the launcher never reads half a file.
#include "reference/distributed/rank_report.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace faultline {
namespace {

void WriteAtomically(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path + ".tmp");
    out << getpid() << "\n" << text;
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
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
  if (!path.empty()) WriteAtomically(path, text);
}

void MarkFromRank(const std::string& mark) {
  const std::string path = RankPath();
  if (!path.empty()) WriteAtomically(path + ".mark-" + mark, mark);
}

}  // namespace faultline
