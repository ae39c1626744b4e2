// Provides MpiTransport: one partition per MPI rank. Every partition of every
// tensor is an MPI window; pulls and pushes are one-sided RMA (MPI_Get and
// MPI_Accumulate under a shared passive-target lock), so a trainer reads and
// writes remote rows without the owner's help, on one machine or many. The
// optimizer's gradient routing is an MPI_Ialltoallv.
//
// Every call is bounded by the timeout (creating a tensor, setup, by the
// join limit: see MpiOptions), also when a peer dies or its host
// becomes unreachable in the middle of it, and the error names the peer and
// its host (liveness.h): "mpi rank 0: reading 16 rows of rank 3 failed:
// rank 3 (pid 4242 on host fl-host1) is no longer running", or "... did not
// complete within 3 s: rank 3 (...) is unreachable (nothing heard from it for
// over 1.5 s)". Collective calls poll their request and return that error.
// A one-sided call that OpenMPI cannot return from (over TCP it spins
// forever on a dead or unreachable target) is abandoned by the watchdog: it
// prints the same error the call would have returned (with the DistTensor
// operation in front), reports it to RunMpiJob (rank_report.h) and ends the
// process with exit code 1 -- within the timeout, or a fraction of it after
// the target was seen to die. After any failure the transport refuses every
// call, closes its liveness connections without a goodbye, and MPI is not
// finalized.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "reference/distributed/liveness.h"
#include "reference/distributed/transport.h"

namespace faultline {

struct MpiOptions {
  // How long any other call waits for the other ranks before it fails.
  std::chrono::milliseconds timeout{30000};
  // How long Create waits for every rank to start and join, and how long
  // creating a tensor may take (every rank reaching it, then
  // MPI_Win_allocate, which spins inside MPI): ranks start and set up at
  // different times (more so on other hosts and on a loaded machine), so
  // setting up gets its own, longer limit.
  std::chrono::milliseconds join_timeout{120000};
  // For fault tests: called with this rank on every rank once the liveness
  // addresses are exchanged, just before the liveness mesh connects (a rank
  // that stalls here makes the others fail to connect, at the join limit).
  std::function<void(int rank)> before_connect_for_testing;
};

// Initializes MPI once per process (MPI_THREAD_SERIALIZED; finalized at
// exit unless a peer failed), marking "started" before MPI_Init and
// "initialized" after it for RunMpiJob (rank_report.h). MpiTransport::Create
// calls it; a program that uses MPI before creating the transport calls it
// first.
Status InitializeMpi();

// Reads FAULTLINE_MPI_TIMEOUT_S (seconds, default 30) and
// FAULTLINE_MPI_JOIN_TIMEOUT_S (default 120) into MpiOptions.
Result<MpiOptions> MpiOptionsFromEnv();

class MpiTransport : public Transport {
 public:
  // Initializes MPI once per process (finalized at exit), joins
  // MPI_COMM_WORLD, and connects the liveness monitor to every rank; marks
  // "joined" for RunMpiJob. Create it once per process, on every rank.
  static Result<std::unique_ptr<MpiTransport>> Create(MpiOptions options = {});
  // Frees the windows (after a timed barrier) and says goodbye to the peers;
  // skipped once a peer failed.
  ~MpiTransport() override;

  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  std::vector<int> LocalPartitions() const override { return {rank_}; }

  Status ReadRows(int handle, int part, const std::vector<int64_t>& local_ids, float* out) override;
  Status WriteRows(int handle, int part, const std::vector<int64_t>& local_ids, const float* rows,
                   WriteMode mode) override;
  Result<std::vector<RowBatch>> RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) override;
  Status Barrier() override;
  Status AgreeOnVerdict(const std::string& what, const Status& mine) override;

 protected:
  Status AgreeOnTensor(const TensorSpec& spec, const Status& checked) override;
  // dim <= INT_MAX: a row is one MPI count (TransferRows).
  Status CheckLimits(const TensorSpec& spec) const override;
  Status AllocateTensor(const TensorSpec& spec) override;
  int num_partitions() const override { return size_; }

 private:
  MpiTransport() = default;
  // Every step of joining after MPI_Init: WireUp, the liveness listener,
  // the address exchange and the liveness mesh; returns the connected monitor.
  Result<std::unique_ptr<LivenessMonitor>> Join();
  // Connects every pair of ranks once, the lower rank first (see the .cc).
  Status WireUp();
  // Polls `request` until it completes, a peer dies, or `limit` (the
  // timeout in the two-argument form) passes; before every rank joined (no
  // monitor yet), the join's deadline applies instead.
  Status Wait(MPI_Request* request, const std::string& what);
  Status Wait(MPI_Request* request, const std::string& what, std::chrono::milliseconds limit);
  // Barrier, within `limit`.
  Status BarrierWithin(std::chrono::milliseconds limit);
  // join_timeout in seconds, as messages print it ("120", "0.5").
  std::string JoinSeconds() const;
  // Records the first failure: the transport is unusable after it.
  Status Fail(Status status);
  std::string MpiErrorText(int mpi_code, const char* call) const;
  Status Check(int mpi_code, const char* call);
  Status Usable() const;
  // Runs one MPI_Get (write = false) or MPI_Accumulate per chunk of rows.
  Status TransferRows(int handle, int part, const std::vector<int64_t>& local_ids, float* buffer, bool write,
                      MPI_Op op);

  int rank_ = 0;
  int size_ = 1;
  std::chrono::steady_clock::time_point join_deadline_;  // one join_timeout from Create
  MpiOptions options_;
  std::unique_ptr<LivenessMonitor> monitor_;  // null until every rank joined
  std::vector<MPI_Win> windows_;              // by tensor handle
  Status failure_;                            // the first failure; the transport is unusable after it
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_
