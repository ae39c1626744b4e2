// Implements RunMpiJob over fork, exec of mpirun, and report files.
#include "reference/distributed/mpi_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace {

constexpr const char kReportDirEnv[] = "FAULTLINE_MPI_REPORT_DIR";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<std::string> MakeJobDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/faultline-mpi-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return UnavailableError("cannot create a directory for the MPI job's reports (" + pattern +
                            "): " + std::strerror(errno));
  }
  return pattern;
}

// How long ranks may take to end after mpirun has: mpirun waits for its
// ranks, so normally none is left and nothing waits; after a timeout the
// job's group was sent SIGKILL and the ranks are dying.
constexpr auto kRankExitGrace = std::chrono::seconds(5);

// Returns whether process `pid` (any process, not only a child) ends by
// `deadline`, waiting on a pidfd, which becomes readable when it ends; a
// zombie has ended, and a pid that no longer exists ended long ago.
bool EndsBy(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH || !ProcessRunning(pid);  // ENOSYS on kernels before 5.3: its state now
  bool ended = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{pidfd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    ended = ready > 0;
    break;
  }
  close(pidfd);
  return ended;
}

void RemoveJobDir(const std::string& dir, int ranks) {
  for (int r = 0; r < ranks; ++r) unlink((dir + "/rank-" + std::to_string(r)).c_str());
  unlink((dir + "/output").c_str());
  rmdir(dir.c_str());
}

}  // namespace

void ReportFromRank(const std::string& text) {
  const char* dir = std::getenv(kReportDirEnv);
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (dir == nullptr || rank == nullptr) return;
  const std::string path = std::string(dir) + "/rank-" + rank;
  {
    std::ofstream out(path + ".tmp");
    out << getpid() << "\n" << text;
  }
  rename((path + ".tmp").c_str(), path.c_str());  // the launcher never sees half a report
}

Result<MpiJob> RunMpiJob(const std::string& entry, const std::vector<std::string>& args,
                         const MpiJobOptions& options) {
  if (options.ranks < 1) return InvalidArgumentError("ranks is " + std::to_string(options.ranks) + "; expected >= 1");
  FL_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  FL_ASSIGN_OR_RETURN(std::string dir, MakeJobDir());

  std::vector<std::string> argv{"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                "-np", std::to_string(options.ranks),
                                // One machine: shared memory only, and no CMA (needs ptrace rights).
                                "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"};
  if (options.keep_survivors) argv.push_back("--enable-recovery");
  argv.push_back(self);
  argv.push_back(std::string(kChildFlag) + entry);
  argv.insert(argv.end(), args.begin(), args.end());

  const std::string output_path = dir + "/output";
  const pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork for mpirun failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // one group: a timeout kills mpirun and every rank
    const int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    setenv(kReportDirEnv, dir.c_str(), 1);
    // OpenMPI's components leak at finalize and are unloaded before LeakSanitizer
    // can name them: ranks skip the leak check; every other ASan check stays on
    // (the in-process tests check the same code for leaks).
    if (const char* asan = std::getenv("ASAN_OPTIONS")) {
      setenv("ASAN_OPTIONS", (std::string(asan) + ":detect_leaks=0").c_str(), 1);
    }
    for (const auto& [key, value] : options.env) setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> c_argv;
    for (std::string& arg : argv) c_argv.push_back(arg.data());
    c_argv.push_back(nullptr);
    execvp("mpirun", c_argv.data());
    std::fprintf(stderr, "cannot run mpirun: %s (install openmpi-bin)\n", std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);

  MpiJob job;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      job.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job.output = ReadFile(output_path);
  job.reports.resize(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    std::ifstream in(dir + "/rank-" + std::to_string(r));
    RankReport& report = job.reports[r];
    if (!(in >> report.pid)) continue;
    report.present = true;
    in.ignore(1);
    std::stringstream text;
    text << in.rdbuf();
    report.text = text.str();
  }
  // A rank that has not ended by the grace deadline is a leftover; it is killed.
  const auto grace_deadline = std::chrono::steady_clock::now() + kRankExitGrace;
  for (const RankReport& report : job.reports) {
    if (report.present && !EndsBy(report.pid, grace_deadline)) {
      job.leftover_pids.push_back(report.pid);
      kill(report.pid, SIGKILL);
    }
  }
  kill(-pid, SIGKILL);  // nothing of the job's process group outlives it
  RemoveJobDir(dir, options.ranks);
  return job;
}

}  // namespace faultline
