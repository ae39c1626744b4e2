// Implements InProcessTransport over plain vectors.
#include "reference/distributed/in_process_transport.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace faultline {

Result<InProcessTransport> InProcessTransport::Create(int num_partitions) {
  if (num_partitions < 1) {
    return InvalidArgumentError("num_partitions is " + std::to_string(num_partitions) + "; expected >= 1");
  }
  return InProcessTransport(num_partitions);
}

std::vector<int> InProcessTransport::LocalPartitions() const {
  std::vector<int> parts(num_partitions_);
  for (int p = 0; p < num_partitions_; ++p) parts[p] = p;
  return parts;
}

Status InProcessTransport::AllocateTensor(const TensorSpec& spec) {
  std::vector<std::vector<float>> partitions(num_partitions_);
  try {
    for (int p = 0; p < num_partitions_; ++p) partitions[p].assign(spec.book.size(p) * spec.dim, 0.0f);
  } catch (const std::bad_alloc&) {
    return UnavailableError("out of memory for " + std::to_string(spec.book.num_ids()) + " rows of dim " +
                            std::to_string(spec.dim) + " (" +
                            std::to_string(spec.book.num_ids() * spec.dim * int64_t{sizeof(float)}) + " bytes)");
  }
  storage_.push_back(std::move(partitions));
  return OkStatus();
}

Status InProcessTransport::ReadRows(int handle, int part, const std::vector<int64_t>& local_ids, float* out) {
  const int64_t dim = spec(handle).dim;
  const float* rows = storage_[handle][part].data();
  for (size_t i = 0; i < local_ids.size(); ++i) {
    std::memcpy(out + i * dim, rows + local_ids[i] * dim, dim * sizeof(float));
  }
  return OkStatus();
}

Status InProcessTransport::WriteRows(int handle, int part, const std::vector<int64_t>& local_ids, const float* rows,
                                     WriteMode mode) {
  const int64_t dim = spec(handle).dim;
  float* stored = storage_[handle][part].data();
  for (size_t i = 0; i < local_ids.size(); ++i) {
    float* row = stored + local_ids[i] * dim;
    const float* value = rows + i * dim;
    if (mode == WriteMode::kOverwrite) {
      std::memcpy(row, value, dim * sizeof(float));
    } else {
      for (int64_t c = 0; c < dim; ++c) row[c] += value[c];
    }
  }
  return OkStatus();
}

Result<std::vector<RowBatch>> InProcessTransport::RouteToOwners(std::vector<RowBatch> by_partition, int64_t) {
  if (static_cast<int>(by_partition.size()) != num_partitions_) {
    return InvalidArgumentError("RouteToOwners: " + std::to_string(by_partition.size()) + " batches for " +
                                std::to_string(num_partitions_) + " partitions");
  }
  // One trainer: every partition's batch is already at its owner, all sent by rank 0.
  for (RowBatch& batch : by_partition) batch.counts_by_sender = {static_cast<int64_t>(batch.ids.size())};
  return by_partition;
}

}  // namespace faultline
