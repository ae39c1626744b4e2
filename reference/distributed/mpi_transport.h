// Provides MpiTransport: one partition per MPI rank. Every partition of every
// tensor is an MPI window; pulls and pushes are one-sided RMA (MPI_Get and
// MPI_Accumulate under a shared passive-target lock), so a trainer reads and
// writes remote rows without the owner's help, on one machine or many. The
// optimizer's gradient routing is an MPI_Ialltoallv. Collective calls wait
// at most a timeout and then name the ranks that are gone.
//
// Limits: one-sided reads and writes are not timed (a peer that dies on
// another host during a pull can block it; on one host the shared window stays
// readable); the first collective after that fails. After a failure the
// transport refuses every call and MPI is not finalized.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "reference/distributed/transport.h"

namespace faultline {

struct MpiOptions {
  // How long a collective call waits for the other ranks before it fails.
  std::chrono::milliseconds timeout{30000};
};

// Reads FAULTLINE_MPI_TIMEOUT_S (seconds, default 30) into MpiOptions.
Result<MpiOptions> MpiOptionsFromEnv();

class MpiTransport : public Transport {
 public:
  // Initializes MPI once per process (finalized at exit) and joins
  // MPI_COMM_WORLD. Create it once per process, on every rank.
  static Result<std::unique_ptr<MpiTransport>> Create(MpiOptions options = {});
  // Frees the windows (after a timed barrier); skipped once a peer failed.
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

 protected:
  Status AllocateTensor(const TensorSpec& spec) override;
  int num_partitions() const override { return size_; }

 private:
  MpiTransport() = default;
  // Polls `request` until it completes or the timeout passes.
  Status Wait(MPI_Request* request, const std::string& what);
  // Names the peers that are no longer running, for a timeout message.
  std::string DescribeMissingPeers() const;
  Status Check(int mpi_code, const char* call);
  Status Usable() const;
  // Runs one MPI_Get (write = false) or MPI_Accumulate per chunk of rows.
  Status TransferRows(int handle, int part, const std::vector<int64_t>& local_ids, float* buffer, bool write,
                      MPI_Op op);

  int rank_ = 0;
  int size_ = 1;
  MpiOptions options_;
  std::vector<pid_t> pids_;          // every rank's pid
  std::vector<std::string> hosts_;   // every rank's host name
  std::vector<MPI_Win> windows_;     // by tensor handle
  Status failure_;                   // the first peer failure; the transport is unusable after it
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_MPI_TRANSPORT_H_
