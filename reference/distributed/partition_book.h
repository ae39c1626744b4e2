// Provides RangePartitionBook: which partition owns each id and where in that
// partition it lives (DGL's RangePartitionBook), with the lookup on the host
// or on the ids' device, and IdLookup: how a caller holding ids on a device
// reaches the lookup (the F3 failure and its two fixes).
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_PARTITION_BOOK_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_PARTITION_BOOK_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/tensor/tensor.h"

namespace faultline {

// How a lookup treats ids that live on a device.
enum class IdLookup {
  kHostView,    // DGL 2.1.0 (PR 7146): takes a host view (nids.numpy()); device ids fail (F3)
  kCopyToHost,  // DGL 2.2.1 (PR 7197): copies the ids to host int64 first
  kOnDevice,    // looks up on the ids' device with a kernel; only the result comes to the host
};

// Returns "host-view", "copy-to-host" or "on-device".
const char* IdLookupName(IdLookup lookup);
// Parses one of IdLookupName's values; `what` names the flag in the error.
Result<IdLookup> ParseIdLookup(std::string_view text, std::string_view what = "--id-lookup");

// The partition and the local id of every looked-up id, in input order.
struct IdLocations {
  std::vector<int32_t> partids;
  std::vector<int64_t> localids;
};

class RangePartitionBook {
 public:
  // Creates a book where partition p owns [ends[p-1], ends[p]) (ends[-1] = 0).
  // `ends` must be non-empty, start at >= 0 and never decrease (empty
  // partitions are allowed).
  static Result<RangePartitionBook> Create(std::vector<int64_t> ends);
  // Splits [0, num_ids) into `num_partitions` ranges whose sizes differ by at most one.
  static Result<RangePartitionBook> Even(int64_t num_ids, int num_partitions);

  int num_partitions() const { return static_cast<int>(ends_.size()); }
  int64_t num_ids() const { return ends_.back(); }
  int64_t start(int partid) const { return partid == 0 ? 0 : ends_[partid - 1]; }
  int64_t size(int partid) const { return ends_[partid] - start(partid); }
  const std::vector<int64_t>& ends() const { return ends_; }

  // Returns each id's partition as host int64 (searchsorted(ends, ids, side=right)).
  // Takes a host view of `ids` the way DGL's nid2partid calls nids.numpy():
  // ids on a device are refused with PyTorch's message.
  Result<Tensor> Nid2PartId(const Tensor& ids) const;
  // Returns ids - start(partid) as host int64; every id must belong to `partid`.
  Result<Tensor> Nid2LocalId(const Tensor& ids, int partid) const;
  // Runs nid2partid and nid2localid on the ids' device (simcuda or cuda);
  // both results stay on that device, as int64.
  Result<std::pair<Tensor, Tensor>> LocateOnDevice(const Tensor& ids) const;

  // Returns the partition and local id of every id, reaching ids on a device
  // as `lookup` says. Ids must be 1-D int64 in [0, num_ids()).
  Result<IdLocations> Locate(const Tensor& ids, IdLookup lookup) const;

 private:
  explicit RangePartitionBook(std::vector<int64_t> ends) : ends_(std::move(ends)) {}
  int PartitionOf(int64_t id) const;
  Status CheckInRange(const int64_t* ids, int64_t n) const;
  Status OutOfRange(int64_t position, int64_t id) const;
  IdLocations LocateHost(const int64_t* ids, int64_t n) const;

  std::vector<int64_t> ends_;
};

// Returns an error naming `what` unless `ids` is a 1-D int64 tensor.
Status CheckIdTensor(const Tensor& ids, const std::string& what = "ids");

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_PARTITION_BOOK_H_
