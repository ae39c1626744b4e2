// Implements RunMpiJob over fork, exec of mpirun, and report files.
#include "reference/distributed/mpi_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "reference/distributed/netns_hosts.h"

#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace {

constexpr const char kAgentMapEnv[] = "FAULTLINE_NETNS_HOSTS";
constexpr const char kAgentEntry[] = "mpi_netns_agent";
// How long mpirun may outlive its last rank before the launcher ends it (keep_survivors).
constexpr auto kMpirunGrace = std::chrono::milliseconds(250);

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

void RemoveJobDir(const std::string& dir) {
  if (DIR* listing = opendir(dir.c_str())) {
    while (dirent* entry = readdir(listing)) {
      const std::string name = entry->d_name;
      if (name != "." && name != "..") unlink((dir + "/" + name).c_str());
    }
    closedir(listing);
  }
  rmdir(dir.c_str());
}

// Reads "<pid>\n<text>" as written by rank_report.cc.
bool ReadPidFile(const std::string& path, pid_t* pid, std::string* text) {
  std::ifstream in(path);
  if (!(in >> *pid)) return false;
  in.ignore(1);
  std::stringstream rest;
  rest << in.rdbuf();
  if (text != nullptr) *text = rest.str();
  return true;
}

// The ssh stand-in: `<self> --faultline-child=mpi_netns_agent HOST WORDS...`
// enters HOST's namespaces and runs WORDS with /bin/sh, as sshd would.
int NetnsAgent(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "mpi_netns_agent: no host given\n");
    return 255;
  }
  const char* map = std::getenv(kAgentMapEnv);
  Result<std::pair<std::string, std::string>> host =
      FindHostInAgentMap(map != nullptr ? map : "", args[0]);
  Status entered = host.ok() ? EnterHost(host->first, host->second) : host.status();
  if (!entered.ok()) {
    std::fprintf(stderr, "mpi_netns_agent: %s\n", entered.ToString().c_str());
    return 255;  // what ssh returns when it cannot reach the host
  }
  std::string command;
  for (size_t i = 1; i < args.size(); ++i) command += (i > 1 ? " " : "") + args[i];
  execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  std::fprintf(stderr, "mpi_netns_agent: cannot run /bin/sh: %s\n", std::strerror(errno));
  return 255;
}
FL_REGISTER_CHILD(kAgentEntry, NetnsAgent);

}  // namespace

std::string MpiJob::Describe() const {
  std::string text = "mpirun exit " + std::to_string(exit_code) + (timed_out ? " (timed out)" : "") +
                     (mpirun_terminated ? " (terminated by the launcher after every rank ended)" : "") +
                     "\n--- output ---\n" + output + "--- reports ---\n";
  for (size_t r = 0; r < reports.size(); ++r) {
    text += "rank " + std::to_string(r) + " (pid " + std::to_string(r < joined_pids.size() ? joined_pids[r] : 0) +
            "): " + (reports[r].present ? reports[r].text : "(none)") + "\n";
  }
  if (!leftover_pids.empty()) text += "leftover ranks: " + std::to_string(leftover_pids.size()) + "\n";
  return text;
}

Result<std::pair<pid_t, std::string>> RunningMpiJob::WaitForFile(const std::string& name, const std::string& what,
                                                                  std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const bool ended = ended_;  // read before looking, so a last write is not missed
    pid_t pid = 0;
    std::string text;
    if (ReadPidFile(dir_ + "/" + name, &pid, &text)) return std::make_pair(pid, text);
    if (ended) return UnavailableError("the job ended before " + what);
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError("no " + what + " within " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll the report folder
  }
}

Result<pid_t> RunningMpiJob::WaitForMark(int rank, const std::string& mark, std::chrono::milliseconds timeout) const {
  FL_ASSIGN_OR_RETURN(auto found, WaitForFile("rank-" + std::to_string(rank) + ".mark-" + mark,
                                              "rank " + std::to_string(rank) + " marked '" + mark + "'", timeout));
  return found.first;
}

bool RunningMpiJob::Reported(int rank) const {
  pid_t pid = 0;
  return ReadPidFile(dir_ + "/rank-" + std::to_string(rank), &pid, nullptr);
}

Result<std::string> RunningMpiJob::WaitForReport(int rank, std::chrono::milliseconds timeout) const {
  FL_ASSIGN_OR_RETURN(auto found, WaitForFile("rank-" + std::to_string(rank),
                                              "rank " + std::to_string(rank) + " reported", timeout));
  return found.second;
}

Result<MpiJob> RunMpiJob(const std::string& entry, const std::vector<std::string>& args,
                         const MpiJobOptions& options) {
  if (options.ranks < 1) return InvalidArgumentError("ranks is " + std::to_string(options.ranks) + "; expected >= 1");
  const NetnsHosts* hosts = options.hosts;
  if (hosts != nullptr) {
    int sum = 0;
    for (int n : options.ranks_per_host) sum += n;
    if (static_cast<int>(options.ranks_per_host.size()) != hosts->size() || sum != options.ranks) {
      return InvalidArgumentError("ranks_per_host must give each of the " + std::to_string(hosts->size()) +
                                  " hosts a count, summing to " + std::to_string(options.ranks) + " ranks");
    }
  }
  FL_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  FL_ASSIGN_OR_RETURN(std::string dir, MakeJobDir());

  std::vector<std::string> argv{"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                "-np", std::to_string(options.ranks)};
  if (hosts == nullptr) {
    // One machine: shared memory only, and no CMA (needs ptrace rights).
    argv.insert(argv.end(), {"--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"});
  } else {
    std::string host_list;
    for (int k = 0; k < hosts->size(); ++k) {
      if (options.ranks_per_host[k] == 0) continue;
      host_list += (host_list.empty() ? "" : ",") + NetnsHosts::address(k) + ":" +
                   std::to_string(options.ranks_per_host[k]);
    }
    // Fill each host's slots in order; TCP only (no shared-memory BTL, no
    // UCX), one-sided through osc pt2pt (osc rdma needs an RDMA network, osc
    // sm one node), and only the hosts' subnet for MPI and mpirun's own traffic.
    argv.insert(argv.end(), {"-H", host_list, "--map-by", "slot",
                             "--mca", "plm_rsh_agent", self + " " + kChildFlag + kAgentEntry,
                             "--mca", "plm_rsh_no_tree_spawn", "1",
                             "--mca", "pml", "ob1", "--mca", "btl", "self,tcp", "--mca", "osc", "pt2pt",
                             "--mca", "btl_tcp_disable_family", "6",
                             "--mca", "btl_tcp_if_include", kNetnsSubnet, "--mca", "oob_tcp_if_include", kNetnsSubnet});
  }
  if (options.keep_survivors) argv.push_back("--enable-recovery");
  argv.insert(argv.end(), options.mpirun_args.begin(), options.mpirun_args.end());
  argv.push_back(self);
  argv.push_back(std::string(kChildFlag) + entry);
  argv.insert(argv.end(), args.begin(), args.end());

  const std::string output_path = dir + "/output";
  const std::string agent_map = hosts != nullptr ? hosts->AgentMap() : "";
  const std::string netns0 = hosts != nullptr ? hosts->netns(0) : "";
  const pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork for mpirun failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // one group: a timeout kills mpirun and every rank on its host
    const int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    setenv(kMpiReportDirEnv, dir.c_str(), 1);
    // OpenMPI's components leak at finalize and are unloaded before LeakSanitizer
    // can name them: ranks skip the leak check; every other ASan check stays on
    // (the in-process tests check the same code for leaks).
    if (const char* asan = std::getenv("ASAN_OPTIONS")) {
      setenv("ASAN_OPTIONS", (std::string(asan) + ":detect_leaks=0").c_str(), 1);
    }
    for (const auto& [key, value] : options.env) setenv(key.c_str(), value.c_str(), 1);
    if (hosts != nullptr) {
      setenv(kAgentMapEnv, agent_map.c_str(), 1);
      const Status entered = EnterHost(netns0, NetnsHosts::hostname(0));
      if (!entered.ok()) {
        std::fprintf(stderr, "cannot enter host 0: %s\n", entered.ToString().c_str());
        _exit(126);
      }
    }
    std::vector<char*> c_argv;
    for (std::string& arg : argv) c_argv.push_back(arg.data());
    c_argv.push_back(nullptr);
    execvp("mpirun", c_argv.data());
    std::fprintf(stderr, "cannot run mpirun: %s (install openmpi-bin)\n", std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);

  RunningMpiJob running(dir, options.ranks);
  std::thread during;
  if (options.during) during = std::thread([&options, &running] { options.during(running); });

  MpiJob job;
  job.joined_pids.assign(options.ranks, 0);
  // Reads the "joined" marks; returns whether every rank has ended: one that
  // joined, or one that reported without joining (it failed before).
  auto every_rank_ended = [&] {
    bool all = true;
    for (int r = 0; r < options.ranks; ++r) {
      const std::string rank_file = dir + "/rank-" + std::to_string(r);
      if (job.joined_pids[r] == 0) ReadPidFile(rank_file + ".mark-joined", &job.joined_pids[r], nullptr);
      pid_t pid = job.joined_pids[r];
      if (pid == 0) ReadPidFile(rank_file, &pid, nullptr);
      if (pid == 0 || ProcessRunning(pid)) all = false;
    }
    return all;
  };
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  std::chrono::steady_clock::time_point ranks_ended{};
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      job.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    if (options.keep_survivors && hosts != nullptr) {
      if (ranks_ended == std::chrono::steady_clock::time_point{} && every_rank_ended()) ranks_ended = now;
      if (ranks_ended != std::chrono::steady_clock::time_point{} && !job.mpirun_terminated &&
          now - ranks_ended > kMpirunGrace) {
        // SIGKILL, not SIGTERM: mpirun takes 2 s over a SIGTERM. Each remote
        // daemon sees its connection to mpirun close and exits by itself.
        job.mpirun_terminated = true;
        kill(-pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  running.set_ended();
  if (during.joinable()) during.join();
  every_rank_ended();  // the last "joined" marks
  job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job.output = ReadFile(output_path);
  job.reports.resize(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    RankReport& report = job.reports[r];
    report.present = ReadPidFile(dir + "/rank-" + std::to_string(r), &report.pid, &report.text);
  }
  // A rank that has not ended by the grace deadline is a leftover; it is killed.
  const auto grace_deadline = std::chrono::steady_clock::now() + kRankExitGrace;
  for (int r = 0; r < options.ranks; ++r) {
    const pid_t rank_pid = job.reports[r].present ? job.reports[r].pid : job.joined_pids[r];
    if (rank_pid > 0 && !EndsBy(rank_pid, grace_deadline)) {
      job.leftover_pids.push_back(rank_pid);
      kill(rank_pid, SIGKILL);
    }
  }
  kill(-pid, SIGKILL);  // nothing of the job's process group outlives it
  RemoveJobDir(dir);
  return job;
}

}  // namespace faultline
