// Implements RunMpiJob over fork, exec of mpirun, and report files.
#include "reference/distributed/testing/mpi_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>
#include <utility>

#include "reference/base/temp_dir.h"
#include "reference/distributed/testing/netns_hosts.h"

#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

constexpr const char kAgentMapEnv[] = "FAULTLINE_NETNS_HOSTS";
constexpr const char kAgentEntry[] = "mpi_netns_agent";
constexpr const char kExecEntry[] = "mpi_netns_exec";
// How long mpirun may outlive its last rank before the launcher ends it (keep_survivors).
constexpr auto kMpirunGrace = std::chrono::milliseconds(250);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The job's folders are removed when RunMpiJob returns, on every path:
// after the job's process group was killed, so nothing writes there any more.
Result<TempDir> MakeJobDir() {
  return TempDir::Create(DefaultTempBase(), "faultline-mpi-", "a directory for the MPI job's reports");
}

// How long ranks may take to end after mpirun has: mpirun waits for its
// ranks, so normally none is left and nothing waits; after a timeout the
// job's group was sent SIGKILL and the ranks are dying.
constexpr auto kRankExitGrace = std::chrono::seconds(5);
// How long the ranks left must all still be inside MPI_Init, after one rank
// ended without finishing it, before the launcher ends them (with
// keep_survivors): far more than a rank takes to write its mark once
// MPI_Init returns, so that a rank past it is never taken for a stuck one.
constexpr auto kInitStuckGrace = std::chrono::seconds(5);

// Open MPI's session folder for one job: mpirun, its daemons and the ranks
// keep their contact files and PMIx shared-memory segments under
// <base>/ompi.<host>.<uid>/ (orte_tmpdir_base). In /tmp itself, every job
// that did not end cleanly (the launcher ended mpirun, a rank was killed, a
// link pulled) left a folder of 8 MB behind: 1,067 of them, 7.6 GB, on
// this project's machine after two days of test runs. A short path (TMPDIR or /tmp, as Open MPI's default) keeps PMIx's
// socket paths within their 108 bytes; Bazel's TEST_TMPDIR is too long.
Result<TempDir> MakeSessionDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  return TempDir::Create(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp", "fl-ompi-",
                         "Open MPI's session folder");
}

// The folder for one single-host job's shared-memory segments (vader's and
// osc sm's, 1 per rank): in /dev/shm, as Open MPI's default, but the job's
// own, since a rank killed before MPI_Finalize never unlinks its segment
// (the launcher ends ranks stuck in MPI_Init: 95 segments had piled up).
Result<TempDir> MakeSharedMemoryDir() {
  return TempDir::Create("/dev/shm", "fl-ompi-", "a folder for Open MPI's shared memory");
}

// The ssh stand-in: `<self> --faultline-child=mpi_netns_agent HOST WORDS...`
// enters HOST's namespaces and runs WORDS with /bin/sh, as sshd would.
int NetnsAgent(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "mpi_netns_agent: no host given\n");
    return 255;
  }
  const char* map = std::getenv(kAgentMapEnv);
  Result<std::pair<std::string, std::string>> host = FindHostInAgentMap(map != nullptr ? map : "", args[0]);
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

// How mpirun starts on host 0: `<self> --faultline-child=mpi_netns_exec
// NETNS HOSTNAME PROGRAM ARGV0 ARGS...` enters that host and execs PROGRAM
// with ARGV0 ARGS (no shell). Entering a host allocates and formats errors,
// which a forked child of a threaded process must not do; a fresh image may.
int NetnsExec(const std::vector<std::string>& args) {
  if (args.size() < 4) {
    std::fprintf(stderr, "%s: expected NETNS HOSTNAME PROGRAM ARGV0 [ARGS...]\n", kExecEntry);
    return 126;
  }
  const Status entered = EnterHost(args[0], args[1]);
  if (!entered.ok()) {
    std::fprintf(stderr, "cannot enter host 0: %s\n", entered.ToString().c_str());
    return 126;
  }
  std::vector<char*> argv;
  for (size_t i = 3; i < args.size(); ++i) argv.push_back(const_cast<char*>(args[i].c_str()));
  argv.push_back(nullptr);
  execv(args[2].c_str(), argv.data());
  std::fprintf(stderr, "%s: cannot run %s: %s\n", kExecEntry, args[2].c_str(), std::strerror(errno));
  return 127;
}
FL_REGISTER_CHILD(kExecEntry, NetnsExec);

// The path of `program` in $PATH, as execvp would find it.
Result<std::string> FindInPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return UnavailableError("cannot run " + program + ": not found in PATH '" + (path != nullptr ? path : "") +
                          "' (install openmpi-bin)");
}

// "exited on signal 9 (Killed)", from mpirun's line about `rank`, or "".
std::string HowMpirunSawItEnd(const std::string& output, int rank) {
  const std::string about = "process rank " + std::to_string(rank) + " with PID ";
  const size_t at = output.find(about);
  if (at == std::string::npos) return "";
  const size_t how = output.find(" exited ", at);
  const size_t end = output.find_first_of(".\n", how == std::string::npos ? at : how + 1);
  if (how == std::string::npos || end == std::string::npos || output.find('\n', at) < how) return "";
  return output.substr(how + 1, end - how - 1);
}

}  // namespace

std::string MpiJob::Describe() const {
  std::string text =
      "mpirun exit " + std::to_string(exit_code) + (timed_out ? " (timed out)" : "") + (stopped ? " (stopped)" : "") +
      (mpirun_terminated ? " (terminated by the launcher: every rank had ended, or the ones left could never leave "
                           "MPI_Init)"
                         : "") +
      "\n--- output ---\n" + output + "--- reports ---\n";
  for (size_t r = 0; r < reports.size(); ++r) {
    pid_t pid = r < joined_pids.size() ? joined_pids[r] : 0;
    if (pid == 0 && r < started_pids.size()) pid = started_pids[r];
    if (pid == 0) pid = reports[r].pid;
    text += "rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
            "): " + (reports[r].present ? reports[r].text : "(none)") + "\n";
  }
  for (const std::string& line : vanished) text += line + "\n";
  if (!leftover_pids.empty()) text += "leftover ranks: " + std::to_string(leftover_pids.size()) + "\n";
  return text;
}

Result<std::pair<ProcessRef, std::string>> RunningMpiJob::WaitForFile(int rank, const std::string& mark,
                                                                      const std::string& what,
                                                                      std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const bool ended = ended_;  // read before looking, so a last write is not missed
    ProcessRef process;
    std::string text;
    if (ReadRankFile(RankFilePath(dir_, rank, mark), &process, &text)) return std::make_pair(process, text);
    if (ended) return UnavailableError("the job ended before " + what);
    if (std::chrono::steady_clock::now() > deadline) {
      return UnavailableError("no " + what + " within " + std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll the report folder
  }
}

Result<pid_t> RunningMpiJob::WaitForMark(int rank, const std::string& mark, std::chrono::milliseconds timeout) const {
  FL_ASSIGN_OR_RETURN(ProcessRef process, WaitForMarkedProcess(rank, mark, timeout));
  return process.pid;
}

Result<ProcessRef> RunningMpiJob::WaitForMarkedProcess(int rank, const std::string& mark,
                                                       std::chrono::milliseconds timeout) const {
  FL_ASSIGN_OR_RETURN(auto found,
                      WaitForFile(rank, mark, "rank " + std::to_string(rank) + " marked '" + mark + "'", timeout));
  return found.first;
}

bool RunningMpiJob::Reported(int rank) const {
  ProcessRef process;
  return ReadRankFile(RankFilePath(dir_, rank), &process, nullptr);
}

Result<std::string> RunningMpiJob::WaitForReport(int rank, std::chrono::milliseconds timeout) const {
  FL_ASSIGN_OR_RETURN(auto found, WaitForFile(rank, "", "rank " + std::to_string(rank) + " reported", timeout));
  return found.second;
}

Result<MpiJob> RunMpiJob(const std::string& entry, const std::vector<std::string>& args, const MpiJobOptions& options) {
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
  FL_ASSIGN_OR_RETURN(const TempDir job_dir, MakeJobDir());
  const std::string& dir = job_dir.path();
  FL_ASSIGN_OR_RETURN(const TempDir session, MakeSessionDir());
  const std::string& session_dir = session.path();
  FL_ASSIGN_OR_RETURN(const std::string mpirun, FindInPath("mpirun"));

  // argv[0] "mpirun", as a shell would run it: an absolute path there
  // would act as mpirun's --prefix (it changes how remote daemons start).
  std::vector<std::string> argv{
      "mpirun", "--allow-run-as-root",         "--oversubscribe", "--bind-to",        "none",
      "-np",    std::to_string(options.ranks), "--mca",           "orte_tmpdir_base", session_dir};
  std::optional<TempDir> shared_memory;
  if (hosts == nullptr) {
    // One machine: shared memory only, and no CMA (needs ptrace rights).
    FL_ASSIGN_OR_RETURN(shared_memory, MakeSharedMemoryDir());
    const std::string& shm_dir = shared_memory->path();
    argv.insert(argv.end(), {"--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none", "--mca",
                             "btl_vader_backing_directory", shm_dir, "--mca", "osc_sm_backing_directory", shm_dir});
  } else {
    std::string host_list;
    for (int k = 0; k < hosts->size(); ++k) {
      if (options.ranks_per_host[k] == 0) continue;
      host_list +=
          (host_list.empty() ? "" : ",") + NetnsHosts::address(k) + ":" + std::to_string(options.ranks_per_host[k]);
    }
    // Fill each host's slots in order; TCP only (no shared-memory BTL, no
    // UCX), one-sided through osc pt2pt (osc rdma needs an RDMA network, osc
    // sm one node), and only the hosts' subnet for MPI and mpirun's own traffic.
    argv.insert(argv.end(), {"-H",
                             host_list,
                             "--map-by",
                             "slot",
                             "--mca",
                             "plm_rsh_agent",
                             self + " " + kChildFlag + kAgentEntry,
                             "--mca",
                             "plm_rsh_no_tree_spawn",
                             "1",
                             "--mca",
                             "pml",
                             "ob1",
                             "--mca",
                             "btl",
                             "self,tcp",
                             "--mca",
                             "osc",
                             "pt2pt",
                             "--mca",
                             "btl_tcp_disable_family",
                             "6",
                             "--mca",
                             "btl_tcp_if_include",
                             kNetnsSubnet,
                             "--mca",
                             "oob_tcp_if_include",
                             kNetnsSubnet});
    // mpirun runs on host 0: through this binary, which enters it and execs mpirun.
    argv.insert(argv.begin(),
                {self, std::string(kChildFlag) + kExecEntry, hosts->netns(0), NetnsHosts::hostname(0), mpirun});
  }
  if (options.keep_survivors) argv.push_back("--enable-recovery");
  argv.insert(argv.end(), options.mpirun_args.begin(), options.mpirun_args.end());
  argv.push_back(self);
  argv.push_back(std::string(kChildFlag) + entry);
  argv.insert(argv.end(), args.begin(), args.end());

  // mpirun's environment: this process's, with the job's variables.
  std::vector<std::pair<std::string, std::string>> set = {{kMpiReportDirEnv, dir}};
  // OpenMPI's components leak at finalize and are unloaded before LeakSanitizer
  // can name them: ranks skip the leak check; every other ASan check stays on
  // (the in-process tests check the same code for leaks).
  if (const char* asan = std::getenv("ASAN_OPTIONS"))
    set.emplace_back("ASAN_OPTIONS", std::string(asan) + ":detect_leaks=0");
  set.insert(set.end(), options.env.begin(), options.env.end());
  if (hosts != nullptr) set.emplace_back(kAgentMapEnv, hosts->AgentMap());
  // Built before fork: this process has threads (the caller's `during`, a test's).
  ExecImage image(std::move(argv), set);
  const std::string output_path = dir + "/output";
  const std::string program = hosts != nullptr ? "/proc/self/exe" : mpirun;
  std::fflush(nullptr);  // the child must not flush this process's buffers again
  const pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork for mpirun failed: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // one group: a timeout kills mpirun and every rank on its host
    const int fd = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
      dup2(fd, STDERR_FILENO);
    }
    image.Exec(program.c_str(), STDERR_FILENO, "cannot run mpirun: execve");
  }
  setpgid(pid, pid);

  RunningMpiJob running(dir, options.ranks);
  std::thread during;
  if (options.during) during = std::thread([&options, &running] { options.during(running); });

  MpiJob job;
  // What the launcher knows of each rank, from its marks and its report.
  // Ranks are mpirun's children, not the launcher's: each is named by its
  // pid and start time, so that a process that got a rank's pid after the
  // rank ended is neither waited for nor killed.
  struct RankState {
    ProcessRef started;             // "started": before MPI_Init
    bool initialized = false;       // "initialized": MPI_Init returned
    ProcessRef joined;              // "joined": MpiTransport::Create succeeded
    ProcessRef reported;            // its report
    bool ended = false;             // its process is gone
    std::string ended_by_launcher;  // why the launcher ended it, if it did
    ProcessRef process() const { return joined.pid != 0 ? joined : started.pid != 0 ? started : reported; }
  };
  std::vector<RankState> ranks(options.ranks);
  // Reads every rank's marks and whether it has ended; returns whether all have.
  auto every_rank_ended = [&] {
    bool all = true;
    for (int r = 0; r < options.ranks; ++r) {
      RankState& rank = ranks[r];
      ProcessRef initialized;
      if (rank.started.pid == 0) ReadRankFile(RankFilePath(dir, r, "started"), &rank.started, nullptr);
      if (!rank.initialized)
        rank.initialized = ReadRankFile(RankFilePath(dir, r, "initialized"), &initialized, nullptr);
      if (rank.joined.pid == 0) ReadRankFile(RankFilePath(dir, r, "joined"), &rank.joined, nullptr);
      if (rank.reported.pid == 0) ReadRankFile(RankFilePath(dir, r), &rank.reported, nullptr);
      rank.ended = rank.process().pid != 0 && !ProcessRunning(rank.process());
      all = all && rank.ended;
    }
    return all;
  };
  // MPI_Init waits for every rank, with no timeout: once a rank is gone
  // without having finished it (no "initialized" mark; it may have
  // reported why, e.g. its own MPI_Init failed), the ranks still inside it
  // wait forever. Returns that rank when the ranks
  // left are all inside MPI_Init (those past it fail at the join limit by
  // themselves, and are waited for), else -1.
  auto gone_inside_init = [&] {
    int gone = -1;
    for (int r = 0; r < options.ranks && gone < 0; ++r) {
      if (ranks[r].ended && !ranks[r].initialized) gone = r;
    }
    for (int r = 0; r < options.ranks && gone >= 0; ++r) {
      if (!ranks[r].ended && (ranks[r].initialized || ranks[r].started.pid == 0)) return -1;
    }
    return gone;
  };
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  const std::chrono::steady_clock::time_point never{};
  std::chrono::steady_clock::time_point ranks_ended = never, stuck_since = never;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    const auto now = std::chrono::steady_clock::now();
    const bool stop = options.stop != nullptr && options.stop->load();
    if (now > deadline || stop) {
      job.stopped = stop;
      job.timed_out = !stop;
      kill(-pid, SIGKILL);
      // A caller's signal handler (dist_bench's) may interrupt the wait.
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    if (options.keep_survivors && !job.mpirun_terminated) {
      const bool all_ended = every_rank_ended();
      if (hosts != nullptr && ranks_ended == never && all_ended) ranks_ended = now;
      if (ranks_ended != never && now - ranks_ended > kMpirunGrace) {
        // SIGKILL, not SIGTERM: mpirun takes 2 s over a SIGTERM. Each remote
        // daemon sees its connection to mpirun close and exits by itself.
        job.mpirun_terminated = true;
        kill(-pid, SIGKILL);
      }
      // Still so kInitStuckGrace later: a rank that just left MPI_Init has
      // marked it by then, however loaded the machine.
      const int gone = all_ended ? -1 : gone_inside_init();
      if (gone < 0) {
        stuck_since = never;
      } else if (stuck_since == never) {
        stuck_since = now;
      } else if (now - stuck_since > kInitStuckGrace) {
        for (int r = 0; r < options.ranks; ++r) {
          if (ranks[r].ended) continue;
          ranks[r].ended_by_launcher = "was inside MPI_Init, which cannot complete without rank " +
                                       std::to_string(gone) + ": the launcher ended it";
          ProcessHandle::Open(ranks[r].started).Signal(SIGKILL);
        }
        job.mpirun_terminated = true;
        kill(-pid, SIGKILL);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  running.set_ended();
  if (during.joinable()) during.join();
  every_rank_ended();  // the last marks
  job.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  job.output = ReadFile(output_path);
  job.reports.resize(options.ranks);
  for (int r = 0; r < options.ranks; ++r) {
    RankReport& report = job.reports[r];
    report.present = ReadRankFile(RankFilePath(dir, r), &ranks[r].reported, &report.text);
    report.pid = ranks[r].reported.pid;
    job.started_pids.push_back(ranks[r].started.pid);
    job.joined_pids.push_back(ranks[r].joined.pid);
  }
  // A rank that has not ended by the grace deadline is a leftover; it is killed.
  const auto grace_deadline = std::chrono::steady_clock::now() + kRankExitGrace;
  for (int r = 0; r < options.ranks; ++r) {
    const ProcessRef rank_process = job.reports[r].present ? ranks[r].reported : ranks[r].process();
    const pid_t rank_pid = rank_process.pid;
    ProcessHandle handle = ProcessHandle::Open(rank_process);
    if (!handle.EndsBy(grace_deadline)) {
      job.leftover_pids.push_back(rank_pid);
      handle.Signal(SIGKILL);
      continue;
    }
    if (rank_pid == 0 || job.reports[r].present) continue;
    // Started, ended, and never reported: killed (by the launcher, mpirun or
    // someone else) or crashed.
    const std::string rank = "rank " + std::to_string(r) + " (pid " + std::to_string(rank_pid) + ") ";
    if (!ranks[r].ended_by_launcher.empty()) {
      job.vanished.push_back(rank + ranks[r].ended_by_launcher);
      continue;
    }
    const std::string how = HowMpirunSawItEnd(job.output, r);
    job.vanished.push_back(rank + "ended without a report, " +
                           (ranks[r].joined.pid != 0 ? "after it joined" : "before it joined") +
                           (how.empty() ? "" : " (mpirun: it " + how + ")"));
  }
  kill(-pid, SIGKILL);  // nothing of the job's process group outlives it
  return job;
}

}  // namespace faultline
