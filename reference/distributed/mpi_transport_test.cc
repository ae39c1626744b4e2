// The distributed layer over real MPI ranks: every test launches `mpirun`
// with this binary's child entry points as the ranks.
#include "reference/distributed/mpi_transport.h"

#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "reference/distributed/distributed_properties.h"
#include "reference/distributed/mpi_launcher.h"
#include "reference/process/child_registry.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

// Runs `body` as one rank and reports its outcome; exit code 0 when it succeeded.
int RunRank(const std::function<Status(MpiTransport&)>& body) {
  Result<MpiOptions> options = MpiOptionsFromEnv();
  Result<std::unique_ptr<MpiTransport>> transport =
      options.ok() ? MpiTransport::Create(*options) : Result<std::unique_ptr<MpiTransport>>(options.status());
  Status status = transport.ok() ? body(**transport) : transport.status();
  ReportFromRank(status.ok() ? "ok" : status.ToString());
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    std::fflush(stderr);
    _exit(1);  // a failed job must not wait in MPI_Finalize for peers
  }
  return 0;
}

// Partition ends for `ranks` partitions of 23 ids; partition 1 is empty when there are 3 or more.
RangePartitionBook UnevenBook(int ranks) {
  std::vector<int64_t> ends;
  for (int p = 0; p < ranks; ++p) ends.push_back(23 * (p + 1) / ranks);
  if (ranks >= 3) ends[1] = ends[0];
  return *RangePartitionBook::Create(ends);
}

// The last rank drives a rapidcheck state machine through one-sided pulls and
// pushes; the others only hold their partitions until it is done.
int StateMachineRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport) -> Status {
    FL_ASSIGN_OR_RETURN(DistTensor tensor,
                        DistTensor::Create(transport, "t", UnevenBook(transport.world_size()), 3, IdLookup::kOnDevice));
    if (transport.rank() == transport.world_size() - 1) {
      FL_ASSIGN_OR_RETURN(DeviceRuntime* const runtime, DeviceRuntimeUnderTest());
      const bool held = rc::check("DistTensor over MPI behaves like one local tensor", [&tensor, runtime] {
        CheckDistTensorAgainstLocalTensor(tensor, runtime);
      });
      if (!held) return InternalError("the state machine found a difference (see the rapidcheck output above)");
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_state_machine", StateMachineRank);

// Every rank generates the same cases from the shared seed, runs its own
// lookups, and rank 0 compares the result with the dense reference.
int OptimizerRank(const std::vector<std::string>& args) {
  const uint64_t seed = std::stoull(args.at(0));
  const int cases = std::stoi(args.at(1));
  return RunRank([seed, cases](MpiTransport& transport) -> Status {
    for (int k = 0; k < cases; ++k) {
      const rc::Gen<OptimizerCase> gen = GenOptimizerCase(transport.world_size(), transport.world_size());
      const OptimizerCase c = gen(rc::Random(seed + k), 30).value();
      FL_ASSIGN_OR_RETURN(std::vector<float> weights,
                          RunDistributedOptimizer(transport, c, "emb" + std::to_string(k)));
      if (transport.rank() == 0 && weights != RunDenseOptimizer(c)) {
        return InternalError("case " + std::to_string(k) + " (seed " + std::to_string(seed + k) +
                             ") differs from the dense reference");
      }
    }
    return OkStatus();
  });
}
FL_REGISTER_CHILD("mpi_optimizer", OptimizerRank);

// Each rank sends bad input of its own; only that rank sees an error and the
// data stays as it was.
int BadInputRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport) -> Status {
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", *RangePartitionBook::Even(8, 4), 2));
    const int r = transport.rank();
    if (r == 0) {
      std::vector<float> rows(16);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i);
      FL_RETURN_IF_ERROR(tensor.PushHost({0, 1, 2, 3, 4, 5, 6, 7}, rows, WriteMode::kOverwrite));
    }
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> before, tensor.PullHost({0, 1, 2, 3, 4, 5, 6, 7}));
    FL_RETURN_IF_ERROR(transport.Barrier());
    Status error;
    std::string expected;
    if (r == 0) {
      error = tensor.Pull(*Tensor::FromVector<int64_t>({3, 8})).status();
      expected = "out_of_range: DistTensor('feat').pull: nid2partid: ids[1] is 8; expected an id in [0, 8)";
    } else if (r == 1) {
      error = tensor.Push(*Tensor::FromVector<float>({1.0f}), *Tensor::FromVector<float>({1, 2}, {1, 2}));
      expected = "invalid_argument: DistTensor('feat').push: ids has dtype float32";
    } else if (r == 2) {
      error = tensor.PushAdd(*Tensor::FromVector<int64_t>({6, 7}), *Tensor::FromVector<float>({1, 2, 3}, {1, 3}));
      expected = "invalid_argument: DistTensor('feat').push_add: rows has dtype float32 and shape [1, 3]; expected "
                 "float32 [2, 2]";
    } else {
      error = DistTensor::Attach(transport, "feet").status();
      expected = "not_found: no distributed tensor named 'feet'; known tensors: feat";
    }
    if (error.ToString().rfind(expected, 0) != 0) {
      return InternalError("rank " + std::to_string(r) + " expected an error starting '" + expected + "', got '" +
                           error.ToString() + "'");
    }
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> after, tensor.PullHost({0, 1, 2, 3, 4, 5, 6, 7}));
    if (after != before) return InternalError("rank " + std::to_string(r) + " sees changed data after bad input");
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_bad_input", BadInputRank);

// Rank 2 dies (SIGKILL) while the others wait for it in a collective.
int DeadRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport) -> Status {
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", *RangePartitionBook::Even(8, 4), 2));
    if (transport.rank() == 2) kill(getpid(), SIGKILL);
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_dead_rank", DeadRank);

std::string Describe(const MpiJob& job) {
  std::string text = "mpirun exit " + std::to_string(job.exit_code) + (job.timed_out ? " (timed out)" : "") +
                     "\n--- output ---\n" + job.output + "--- reports ---\n";
  for (size_t r = 0; r < job.reports.size(); ++r) {
    text += "rank " + std::to_string(r) + ": " + (job.reports[r].present ? job.reports[r].text : "(none)") + "\n";
  }
  return text;
}

void ExpectEveryRankOk(const MpiJob& job) {
  EXPECT_EQ(job.exit_code, 0) << Describe(job);
  for (const RankReport& report : job.reports) EXPECT_EQ(report.text, "ok") << Describe(job);
  EXPECT_TRUE(job.leftover_pids.empty()) << Describe(job);
}

MpiJobOptions Ranks(int ranks) {
  MpiJobOptions options;
  options.ranks = ranks;
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", "240"}};
  return options;
}

TEST(MpiTransportTest, DistTensorBehavesLikeOneLocalTensorOnOneToFourRanks) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    Result<MpiJob> job = RunMpiJob("mpi_state_machine", {}, Ranks(ranks));
    ASSERT_TRUE(job.ok()) << job.status();
    SCOPED_TRACE("ranks " + std::to_string(ranks));
    ExpectEveryRankOk(*job);
  }
}

TEST(MpiTransportTest, OptimizerStepsEqualTheDenseReferenceOnOneToFourRanks) {
  const uint64_t seed = static_cast<uint64_t>(getpid()) * 1000003u;
  for (int ranks = 1; ranks <= 4; ++ranks) {
    Result<MpiJob> job = RunMpiJob("mpi_optimizer", {std::to_string(seed), "25"}, Ranks(ranks));
    ASSERT_TRUE(job.ok()) << job.status();
    SCOPED_TRACE("ranks " + std::to_string(ranks) + ", seed " + std::to_string(seed));
    ExpectEveryRankOk(*job);
  }
}

TEST(MpiTransportTest, BadInputFailsOnlyOnTheCallingRankAndChangesNothing) {
  Result<MpiJob> job = RunMpiJob("mpi_bad_input", {}, Ranks(4));
  ASSERT_TRUE(job.ok()) << job.status();
  ExpectEveryRankOk(*job);
}

// With the default launcher a dead rank takes the job down at once, and
// mpirun names it.
TEST(MpiTransportTest, DeadRankEndsTheJobAndMpirunNamesIt) {
  MpiJobOptions options = Ranks(4);
  options.timeout = std::chrono::seconds(60);
  Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->timed_out) << Describe(*job);
  EXPECT_NE(job->exit_code, 0) << Describe(*job);
  EXPECT_THAT(job->output, testing::HasSubstr("process rank 2 with PID")) << Describe(*job);
  EXPECT_THAT(job->output, testing::HasSubstr("exited on signal 9 (Killed)")) << Describe(*job);
  EXPECT_TRUE(job->leftover_pids.empty()) << Describe(*job);
}

// When the survivors are left running, their collective call fails after the
// transport's timeout and names the rank that is gone.
TEST(MpiTransportTest, DeadRankMakesSurvivorsFailWithinTheTimeout) {
  MpiJobOptions options = Ranks(4);
  options.keep_survivors = true;
  options.timeout = std::chrono::seconds(60);
  options.env = {{"FAULTLINE_MPI_TIMEOUT_S", "3"}};
  Result<MpiJob> job = RunMpiJob("mpi_dead_rank", {}, options);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->timed_out) << Describe(*job);
  EXPECT_FALSE(job->reports[2].present) << Describe(*job);
  for (int r : {0, 1, 3}) {
    const RankReport& report = job->reports[r];
    ASSERT_TRUE(report.present) << Describe(*job);
    const std::string expected =
        "unavailable: mpi rank " + std::to_string(r) + ": barrier did not complete within 3 s: ";
    EXPECT_EQ(report.text.rfind(expected, 0), 0u) << Describe(*job);
    // Survivors that gave up first may be named too, by a slower survivor.
    EXPECT_NE(report.text.find("rank 2 (pid "), std::string::npos) << Describe(*job);
    EXPECT_NE(report.text.find(") is no longer running"), std::string::npos) << Describe(*job);
  }
  EXPECT_TRUE(job->leftover_pids.empty()) << Describe(*job);
}

}  // namespace
}  // namespace faultline
