// Provides Transport: moves float32 rows between a trainer process and the
// partitions that store them, behind one interface with two implementations
// (in-process partitions for unit tests, MPI ranks across machines). It also
// keeps the registry of named distributed tensors.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TRANSPORT_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TRANSPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/distributed/partition_book.h"

namespace faultline {

// A named num_ids x dim float32 tensor split across partitions by `book`.
struct TensorSpec {
  std::string name;
  RangePartitionBook book;
  int64_t dim;
  // What else every trainer must give alike for this tensor, as text (an
  // optimizer's hyperparameters for its state tensors); "" for none.
  std::string settings = "";
};

enum class WriteMode { kOverwrite, kAdd };

// Rows addressed by local ids of one partition: rows.size() == ids.size() * dim.
struct RowBatch {
  std::vector<int64_t> ids;
  std::vector<float> rows;
  // In what RouteToOwners returns: how many of `ids` each trainer sent, in
  // rank order (they are concatenated in that order), so that a bad id can
  // be blamed on its sender.
  std::vector<int64_t> counts_by_sender;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Returns "in-process" or "mpi".
  virtual const char* name() const = 0;
  // This trainer's rank and the number of trainers (1 for in-process).
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Returns the partitions whose storage lives in this process.
  virtual std::vector<int> LocalPartitions() const = 0;

  // Creates a zero-filled tensor. Every trainer must call it, in the same
  // order, with the same spec. Returns its handle. A spec this trainer
  // refuses (empty or taken name, dim < 1, another number of partitions),
  // or a `caller_verdict` that is an error (the caller refused its own
  // arguments, such as an optimizer's), fails with its reason here and makes
  // every other trainer fail too, naming this one, with nothing created
  // anywhere: the trainers stay in step for the next creation. (A trainer
  // whose transport already failed cannot take part: the others then fail
  // at the join limit.)
  Result<int> CreateTensor(const TensorSpec& spec, const Status& caller_verdict = OkStatus());
  // Returns the handle of the tensor named `name`, or NotFound naming the known ones.
  Result<int> FindTensor(const std::string& name) const;
  const TensorSpec& spec(int handle) const { return specs_[handle]; }

  // Copies rows `local_ids` (valid, duplicates allowed) of partition `part`
  // into `out` (ids.size() x dim), in order.
  virtual Status ReadRows(int handle, int part, const std::vector<int64_t>& local_ids, float* out) = 0;
  // Overwrites or adds rows; `local_ids` are valid and unique within one call.
  virtual Status WriteRows(int handle, int part, const std::vector<int64_t>& local_ids, const float* rows,
                           WriteMode mode) = 0;

  // Sends by_partition[p] to the owner of partition p and returns, for each
  // of LocalPartitions(), what every trainer sent it, concatenated in rank
  // order. Every trainer must call it.
  virtual Result<std::vector<RowBatch>> RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) = 0;
  // Waits until every trainer reaches the barrier.
  virtual Status Barrier() = 0;
  // Lets the trainers agree on a verdict each reached alone on `what` (such
  // as "the step"), before a collective that a refusing trainer would skip:
  // `mine` is this trainer's. Returns `mine` when it is an error; else an
  // error naming the first trainer whose verdict is one, with its reason;
  // else OK. Every trainer must call it, whatever its verdict. One trainer
  // has nothing to agree with.
  virtual Status AgreeOnVerdict(const std::string& what, const Status& mine) { return mine; }

 protected:
  // Lets the trainers agree on a creation before any allocates; `checked`
  // is this trainer's own verdict on `spec`. Returns an error naming the
  // first trainer that refused its spec or differs from trainer 0's; every
  // trainer calls it, whatever its verdict. One trainer has nothing to agree with.
  virtual Status AgreeOnTensor(const TensorSpec&, const Status&) { return OkStatus(); }
  // This transport's own limits on a spec (a part of this trainer's verdict
  // on it); CheckSpec's general checks passed.
  virtual Status CheckLimits(const TensorSpec&) const { return OkStatus(); }
  // Allocates zero-filled storage for the partitions in LocalPartitions().
  virtual Status AllocateTensor(const TensorSpec& spec) = 0;
  // The number of partitions every tensor of this transport must have.
  virtual int num_partitions() const = 0;

 private:
  std::vector<TensorSpec> specs_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TRANSPORT_H_
