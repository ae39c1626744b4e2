// Provides InProcessTransport: every partition in this process, one trainer.
// Unit tests use it to run the distributed layer without launching ranks.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_IN_PROCESS_TRANSPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_IN_PROCESS_TRANSPORT_H_

#include <vector>

#include "reference/distributed/transport.h"

namespace faultline {

class InProcessTransport : public Transport {
 public:
  // Creates a transport holding `num_partitions` (>= 1) partitions.
  static Result<InProcessTransport> Create(int num_partitions);

  const char* name() const override { return "in-process"; }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::vector<int> LocalPartitions() const override;

  Status ReadRows(int handle, int part, const std::vector<int64_t>& local_ids, float* out) override;
  Status WriteRows(int handle, int part, const std::vector<int64_t>& local_ids, const float* rows,
                   WriteMode mode) override;
  Result<std::vector<RowBatch>> RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) override;
  Status Barrier() override { return OkStatus(); }

 protected:
  Status AllocateTensor(const TensorSpec& spec) override;
  int num_partitions() const override { return num_partitions_; }

  // For tests only, which derive a transport misbehaving on purpose.
  explicit InProcessTransport(int num_partitions) : num_partitions_(num_partitions) {}

 private:
  int num_partitions_;
  // storage_[handle][partition]: that partition's rows, row-major.
  std::vector<std::vector<std::vector<float>>> storage_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_IN_PROCESS_TRANSPORT_H_
