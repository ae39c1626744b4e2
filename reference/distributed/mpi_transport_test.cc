// The distributed layer over real MPI ranks on this machine: every test
// launches `mpirun` with this binary's child entry points (mpi_test_ranks.h)
// as the ranks.
#include "reference/distributed/mpi_transport.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/distributed/testing/mpi_launcher.h"
#include "reference/distributed/testing/mpi_test_ranks.h"
#include "reference/process/process_at_pid.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

void ExpectEveryRankOk(const MpiJob& job) {
  EXPECT_EQ(job.exit_code, 0) << job.Describe();
  for (const RankReport& report : job.reports) EXPECT_EQ(report.text, "ok") << job.Describe();
  EXPECT_TRUE(job.leftover_pids.empty()) << job.Describe();
}

MpiJobOptions Ranks(int ranks) {
  MpiJobOptions options;
  options.ranks = ranks;
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", "240"}};
  return options;
}

// The two limits come from the environment; a bad value names its variable.
TEST(MpiOptionsTest, ReadsBothTimeoutsAndNamesABadValue) {
  setenv("FAULTLINE_MPI_TIMEOUT_S", "2.5", 1);
  setenv("FAULTLINE_MPI_JOIN_TIMEOUT_S", "40", 1);
  Result<MpiOptions> options = MpiOptionsFromEnv();
  FL_ASSERT_OK(options);
  EXPECT_EQ(options->timeout.count(), 2500);
  EXPECT_EQ(options->join_timeout.count(), 40000);
  for (const char* bad : {"0", "-1", "abc", "90000", "3s"}) {
    setenv("FAULTLINE_MPI_JOIN_TIMEOUT_S", bad, 1);
    options = MpiOptionsFromEnv();
    ASSERT_FALSE(options.ok()) << bad;
    EXPECT_EQ(options.status().ToString(), std::string("invalid_argument: FAULTLINE_MPI_JOIN_TIMEOUT_S is '") + bad +
                                               "'; expected seconds in (0, 86400]");
  }
  unsetenv("FAULTLINE_MPI_TIMEOUT_S");
  unsetenv("FAULTLINE_MPI_JOIN_TIMEOUT_S");
  options = MpiOptionsFromEnv();
  FL_ASSERT_OK(options);
  EXPECT_EQ(options->timeout.count(), 30000);
  EXPECT_EQ(options->join_timeout.count(), 120000);
}

TEST(MpiTransportTest, DistTensorBehavesLikeOneLocalTensorOnOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    Result<MpiJob> job = RunMpiJob("mpi_state_machine", {}, Ranks(ranks));
    FL_ASSERT_OK(job);
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    ExpectEveryRankOk(*job);
  }
}

TEST(MpiTransportTest, OptimizerStepsEqualTheDenseReferenceOnOneToFourRanks) {
  Result<uint64_t> seed_or = OptimizerSeed();
  FL_ASSERT_OK(seed_or);
  const uint64_t seed = *seed_or;
  for (int ranks = 1; ranks <= 4; ++ranks) {
    Result<MpiJob> job = RunMpiJob("mpi_optimizer", {std::to_string(seed), "25"}, Ranks(ranks));
    FL_ASSERT_OK(job);
    SCOPED_TRACE("ranks " + std::to_string(ranks) + ", seed " + std::to_string(seed));
    ExpectEveryRankOk(*job);
  }
}

TEST(MpiTransportTest, BadInputFailsOnlyOnTheCallingRankAndChangesNothing) {
  Result<MpiJob> job = RunMpiJob("mpi_bad_input", {}, Ranks(4));
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

TEST(MpiTransportTest, RanksThatCreateDifferentTensorsAllFailAndNameTheFirstThatDiffers) {
  Result<MpiJob> job = RunMpiJob("mpi_mismatched_tensors", {}, Ranks(4));
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

TEST(MpiTransportTest, RanksGivenOtherOptimizerArgumentsAllFailAndNameTheFirst) {
  Result<MpiJob> job = RunMpiJob("mpi_optimizer_arguments", {}, Ranks(4));
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

// With the default launcher a dead rank takes the job down at once, and it
// is named: by mpirun, or, when a survivor learned of the death (over its
// liveness connection) and exited before mpirun reaped the dead rank, by
// every survivor that reported; mpirun then names that survivor. Both
// happen: 2 of 10 runs on 2 busy cores took the second way.
TEST(MpiTransportTest, DeadRankEndsTheJobAndIsNamed) {
  MpiJobOptions options = Ranks(4);
  options.timeout = std::chrono::seconds(60);
  Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, options);
  FL_ASSERT_OK(job);
  EXPECT_FALSE(job->timed_out) << job->Describe();
  EXPECT_NE(job->exit_code, 0) << job->Describe();
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  if (job->output.find("mpirun noticed that process rank 2 ") != std::string::npos) {
    // OpenMPI 4.1 prints PID 0 here.
    EXPECT_THAT(job->output, testing::ContainsRegex(std::string("mpirun noticed that process rank 2 with PID [0-9]+ on "
                                                                "node ") +
                                                    host + " exited on signal 9 \\(Killed\\)\\."))
        << job->Describe();
    return;
  }
  EXPECT_THAT(job->output, testing::HasSubstr("mpirun detected that one or more processes exited with non-zero status"))
      << job->Describe();
  int reported = 0;
  for (int r : {0, 1, 3}) {
    if (!job->reports[r].present) continue;  // mpirun ended it first
    ++reported;
    EXPECT_EQ(job->reports[r].text, "unavailable: mpi rank " + std::to_string(r) + ": barrier failed: rank 2 (pid " +
                                        std::to_string(job->joined_pids[2]) + " on host " + host +
                                        ") is no longer running")
        << job->Describe();
  }
  EXPECT_GE(reported, 1) << job->Describe();
}

// When the survivors are left running, their collective call fails at once
// (the liveness monitor saw the dead rank's connection close), well within
// the transport's timeout, and names the rank that is gone and its host.
TEST(MpiTransportTest, DeadRankMakesSurvivorsFailWithinTheTimeout) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", "3"}};
  // Timed from rank 2's "joined" mark, which it writes just before it kills
  // itself, to the last survivor's report: not the job's start-up, which a
  // loaded machine stretches.
  double slowest_s = -1;
  std::string during_error;
  options.during = [&](RunningMpiJob& running) {
    Result<pid_t> joined = running.WaitForMark(2, "joined", std::chrono::seconds(60));
    if (!joined.ok()) {
      during_error = joined.status().ToString();
      return;
    }
    const auto died = std::chrono::steady_clock::now();
    const auto give_up = died + std::chrono::seconds(30);
    for (int r : {0, 1, 3}) {
      while (!running.Reported(r) && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polls the report files
      }
    }
    slowest_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - died).count();
  };
  Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, options);
  FL_ASSERT_OK(job);
  ASSERT_TRUE(during_error.empty()) << during_error << job->Describe();
  EXPECT_FALSE(job->timed_out) << job->Describe();
  EXPECT_FALSE(job->reports[2].present) << job->Describe();
  ASSERT_NE(job->joined_pids[2], 0) << job->Describe();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string dead =
      "rank 2 (pid " + std::to_string(job->joined_pids[2]) + " on host " + host + ") is no longer running";
  for (int r : {0, 1, 3}) {
    const RankReport& report = job->reports[r];
    ASSERT_TRUE(report.present) << job->Describe();
    const std::string expected = "unavailable: mpi rank " + std::to_string(r) + ": barrier failed: " + dead;
    // A survivor that gave up first may be named after rank 2 by a slower one.
    if (report.text != expected) {
      EXPECT_EQ(report.text.rfind(expected + "; rank ", 0), 0u) << job->Describe();
    }
  }
  // The reports' text proves each survivor learned of the death before its
  // 3 s deadline (a timeout reads "did not complete within 3 s"); the time
  // is printed, not asserted: no wall-clock bound in a test.
  EXPECT_GE(slowest_s, 0) << job->Describe();
  std::printf("the last survivor reported %.3f s after rank 2 died\n", slowest_s);
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
}

// Joining has one limit for all its steps, and a rank that gives up names
// the ranks it has no connection from.
TEST(MpiTransportTest, ARankThatNeverJoinsIsNamedByTheOthersAtTheJoinLimit) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  options.env = {{"FAULTLINE_MPI_JOIN_TIMEOUT_S", "2"}};
  Result<MpiJob> job = RunMpiJob("mpi_late_join", {"8"}, options);
  FL_ASSERT_OK(job);
  EXPECT_FALSE(job->timed_out) << job->Describe();
  for (int r : {1, 2, 3}) {
    EXPECT_EQ(job->reports[r].text, "unavailable: mpi rank " + std::to_string(r) +
                                        ": connecting to every rank did not complete within 2 s: not every rank has "
                                        "joined (rank 0 has not connected)")
        << job->Describe();
  }
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
}

// A rank that reaches DistTensor::Create 10 s after the others, with a 6 s
// operation timeout (as the fault tests use: the calls after the setup
// must not run out of it on a loaded machine): creating a tensor is setup,
// bounded by the join limit (FAULTLINE_MPI_JOIN_TIMEOUT_S), so every rank
// succeeds. With a fixed 6 s limit the others once failed ("barrier did not
// complete within 6 s").
TEST(MpiTransportTest, ALateRankAtTensorCreationIsWithinTheSetupLimit) {
  MpiJobOptions options = Ranks(4);
  options.timeout = std::chrono::seconds(90);
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", "6"}, {"FAULTLINE_MPI_JOIN_TIMEOUT_S", "60"}};
  Result<MpiJob> job = RunMpiJob("mpi_late_setup", {"10"}, options);
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

// The ranks' verdicts are agreed before a collective that a refusing rank
// would skip: with a 60 s timeout, before the fix the others waited for
// rank 1 in RouteToOwners until it ran out, and rank 2's made-up counts were
// routed as they were.
MpiJobOptions RanksWithTimeout(int ranks, const char* timeout_s) {
  MpiJobOptions options = Ranks(ranks);
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", timeout_s}};
  return options;
}

TEST(MpiTransportTest, ARankThatRefusesAnOptimizerStepIsNamedByEveryRankAndNothingChanges) {
  Result<MpiJob> job = RunMpiJob("mpi_step_refused", {}, RanksWithTimeout(4, "60"));
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

TEST(MpiTransportTest, ARankThatRefusesItsRoutingBatchesIsNamedByEveryRankAndNothingMoves) {
  Result<MpiJob> job = RunMpiJob("mpi_route_refused", {}, RanksWithTimeout(4, "60"));
  FL_ASSERT_OK(job);
  ExpectEveryRankOk(*job);
}

// Waits until `process` has ended, or the job has; true when `process` has.
bool WaitUntilEnded(const RunningMpiJob& running, const ProcessRef& process) {
  ProcessHandle handle = ProcessHandle::Open(process);
  // 10 ms at a time: then look whether the job ended.
  while (!handle.EndsBy(std::chrono::steady_clock::now() + std::chrono::milliseconds(10))) {
    if (running.ended()) return false;
  }
  return true;
}

// Rank 0 stalls after the address exchange, before the liveness mesh: the
// others fail to connect at the join limit, naming it, and exit (through
// exit(), so the atexit handlers run) while it still stalls. Before, their
// failure was not recorded, so MPI_Finalize at exit waited for rank 0: the
// job ran to its 60 s timeout.
TEST(MpiTransportTest, RanksThatFailToConnectTheLivenessMeshNameTheStalledRankAndExit) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  options.env = {{"FAULTLINE_MPI_JOIN_TIMEOUT_S", "3"}};
  std::string during_error;
  pid_t stalled = 0;
  options.during = [&](RunningMpiJob& running) {
    Result<ProcessRef> rank0 = running.WaitForMarkedProcess(0, "stalled", std::chrono::seconds(60));
    if (!rank0.ok()) {
      during_error = rank0.status().ToString();
      return;
    }
    stalled = rank0->pid;
    for (int r : {1, 2, 3}) {
      Result<ProcessRef> other = running.WaitForMarkedProcess(r, "started", std::chrono::seconds(60));
      if (!other.ok() || !WaitUntilEnded(running, *other)) {
        during_error += "rank " + std::to_string(r) + " did not end while rank 0 stalled (" +
                        (other.ok() ? "still running when the job ended" : other.status().ToString()) + ")\n";
      }
    }
    ProcessHandle::Open(*rank0).Signal(SIGKILL);
  };
  Result<MpiJob> job = RunMpiJob("mpi_stall_before_connect", {}, options);
  FL_ASSERT_OK(job);
  EXPECT_TRUE(during_error.empty()) << during_error << job->Describe();
  EXPECT_FALSE(job->timed_out) << job->Describe();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  for (int r : {1, 2, 3}) {
    EXPECT_EQ(job->reports[r].text, "unavailable: mpi rank " + std::to_string(r) +
                                        ": no liveness connection from rank 0 (pid " + std::to_string(stalled) +
                                        " on host " + host + ") before the deadline")
        << job->Describe();
  }
  EXPECT_THAT(job->vanished, testing::ElementsAre("rank 0 (pid " + std::to_string(stalled) +
                                                  ") ended without a report, before it joined"))
      << job->Describe();
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
}

// Rank 2 is killed after its "started" mark and before MPI_Init: the others
// wait inside MPI_Init, which has no timeout. The launcher sees rank 2 gone
// (its "started" pid) without a report, ends the ranks left inside
// MPI_Init, and names every rank. Before, the job ran to its 60 s timeout
// and named nobody.
TEST(MpiTransportTest, ARankKilledBeforeMpiInitEndsTheJobAndEveryRankIsNamed) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  Result<MpiJob> job = RunMpiJob("mpi_die_joining", {"before_init"}, options);
  FL_ASSERT_OK(job);
  EXPECT_FALSE(job->timed_out) << job->Describe();
  EXPECT_TRUE(job->mpirun_terminated) << job->Describe();
  ASSERT_EQ(job->vanished.size(), 4u) << job->Describe();
  for (int r = 0; r < 4; ++r) {
    const std::string rank = "rank " + std::to_string(r) + " (pid " + std::to_string(job->started_pids[r]) + ") ";
    EXPECT_EQ(job->vanished[r], r == 2 ? rank + "ended without a report, before it joined"
                                       : rank +
                                             "was inside MPI_Init, which cannot complete without rank 2: the "
                                             "launcher ended it")
        << job->Describe();
  }
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
}

// Rank 2 dies before MPI_Init, and another process gets its pid at once, as
// happens by itself once pids come round (pid_max is 32768 here). The
// launcher knows rank 2 by pid and start time: it still sees rank 2 gone,
// ends the ranks left inside MPI_Init, and neither waits for nor kills the
// stranger. Before, the launcher knew a rank by its pid alone: it took the
// stranger for rank 2, so the job ran to its timeout, and then it killed the
// stranger as a leftover rank.
TEST(MpiLauncherTest, AProcessThatGetsAnEndedRanksPidIsNotTakenForTheRank) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(30);
  std::optional<ProcessAtPid> stranger;
  std::string during_error;
  options.during = [&](RunningMpiJob& running) {
    Result<ProcessRef> rank2 = running.WaitForMarkedProcess(2, "started", std::chrono::seconds(30));
    Result<ProcessAtPid> started = rank2.ok()
                                       ? ProcessAtPid::Start(rank2->pid, rank2->start_ticks, std::chrono::seconds(10))
                                       : Result<ProcessAtPid>(rank2.status());
    if (started.ok()) {
      stranger.emplace(std::move(*started));
    } else {
      during_error = started.status().ToString();
    }
  };
  Result<MpiJob> job = RunMpiJob("mpi_die_joining", {"before_init"}, options);
  FL_ASSERT_OK(job);
  ASSERT_TRUE(stranger.has_value()) << during_error;
  EXPECT_EQ(stranger->pid(), job->started_pids[2]);
  EXPECT_TRUE(stranger->Running()) << "the launcher killed the process that got rank 2's pid\n" << job->Describe();
  EXPECT_FALSE(job->timed_out) << job->Describe();
  EXPECT_TRUE(job->mpirun_terminated) << job->Describe();
  EXPECT_THAT(job->vanished, testing::Contains("rank 2 (pid " + std::to_string(job->started_pids[2]) +
                                               ") ended without a report, before it joined"))
      << job->Describe();
  EXPECT_TRUE(job->leftover_pids.empty()) << job->Describe();
}

// Without --enable-recovery mpirun ends the job and says how rank 2 ended;
// the launcher names it, with mpirun's words.
TEST(MpiTransportTest, ARankKilledWhileJoiningIsNamedWithHowMpirunSawItEnd) {
  MpiJobOptions options = Ranks(4);
  options.timeout = std::chrono::seconds(60);
  Result<MpiJob> job = RunMpiJob("mpi_die_joining", {"after_init"}, options);
  FL_ASSERT_OK(job);
  EXPECT_FALSE(job->timed_out) << job->Describe();
  EXPECT_THAT(job->vanished, testing::Contains("rank 2 (pid " + std::to_string(job->started_pids[2]) +
                                               ") ended without a report, before it joined (mpirun: it exited on "
                                               "signal 9 (Killed))"))
      << job->Describe();
}

// mpirun's environment and arguments are built before fork: its forked
// child (of this threaded process) calls nothing that takes a lock. Before,
// it called setenv, whose lock another thread's setenv held forever in the
// child at about every fork here: the job never started.
TEST(MpiLauncherTest, StartsJobsWhileAnotherThreadChangesTheEnvironment) {
  setenv("FAULTLINE_LAUNCHER_TEST_NOISE", "a", 1);  // from now on only replaced in place
  std::atomic<bool> stop{false};
  std::thread changer([&stop] {
    for (int i = 0; !stop; ++i) setenv("FAULTLINE_LAUNCHER_TEST_NOISE", i % 2 ? "a" : "b", 1);
  });
  for (int k = 0; k < 5; ++k) {
    MpiJobOptions options = Ranks(1);
    options.timeout = std::chrono::seconds(60);
    Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, options);  // one rank: a barrier
    FL_ASSERT_OK(job);
    EXPECT_FALSE(job->timed_out) << "job " << k << "\n" << job->Describe();
    ExpectEveryRankOk(*job);
  }
  stop = true;
  changer.join();
}

int JobFolders() {
  const char* base = std::getenv("TEST_TMPDIR");
  int n = 0;
  if (DIR* listing = opendir(base != nullptr ? base : "/tmp")) {
    while (dirent* entry = readdir(listing)) n += std::string(entry->d_name).rfind("faultline-mpi-", 0) == 0;
    closedir(listing);
  }
  return n;
}

// mpirun is looked up before anything starts; an error before the job
// starts leaves no report folder behind (before: a failed fork returned
// without removing it).
TEST(MpiLauncherTest, AJobThatCannotStartSaysWhyAndLeavesNoReportFolder) {
  const int folders = JobFolders();
  const std::string path = std::getenv("PATH");
  setenv("PATH", "/nonexistent", 1);
  Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, Ranks(1));
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(job.status().ToString(),
            "unavailable: cannot run mpirun: not found in PATH '/nonexistent' (install openmpi-bin)");
  EXPECT_EQ(JobFolders(), folders);
}

// Open MPI's entries in /dev/shm: the shared-memory segments of its vader
// transport ("vader_segment.<host>...") and the launcher's per-job folders.
int OpenMpiSharedMemoryEntries() {
  int n = 0;
  if (DIR* listing = opendir("/dev/shm")) {
    while (dirent* entry = readdir(listing)) {
      const std::string name = entry->d_name;
      n += name.rfind("vader_segment", 0) == 0 || name.rfind("fl-ompi-", 0) == 0;
    }
    closedir(listing);
  }
  return n;
}

// Each rank of a one-host job maps a vader segment in /dev/shm and unlinks
// it at MPI_Finalize. Ranks the launcher ends inside MPI_Init (a rank died
// before it: they could never finish) left theirs: 95 of them in this
// machine's /dev/shm after a day of test runs. The launcher now puts them
// in a folder of the job's own (btl_vader_backing_directory,
// osc_sm_backing_directory) and removes it. MPI tests run alone (tag
// exclusive), so no other job's segment comes and goes meanwhile.
TEST(MpiLauncherTest, RanksEndedInsideMpiInitLeaveNoSharedMemorySegment) {
  const int before = OpenMpiSharedMemoryEntries();
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  Result<MpiJob> job = RunMpiJob("mpi_die_joining", {"before_init"}, options);
  FL_ASSERT_OK(job);
  EXPECT_TRUE(job->mpirun_terminated) << job->Describe();
  EXPECT_EQ(OpenMpiSharedMemoryEntries(), before) << job->Describe();
}

}  // namespace
}  // namespace faultline
