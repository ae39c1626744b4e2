// Provides DistTensor: a named float32 matrix partitioned across a Transport,
// read and written by global row ids from any trainer (DGL's DistTensor).
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_DIST_TENSOR_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_DIST_TENSOR_H_

#include <string>

#include "reference/base/status.h"
#include "reference/distributed/partition_book.h"
#include "reference/distributed/transport.h"
#include "reference/tensor/tensor.h"

namespace faultline {

class DistTensor {
 public:
  // Creates a zero-filled book.num_ids() x dim tensor; every trainer must
  // call it in the same order (collective under MPI).
  static Result<DistTensor> Create(Transport& transport, const std::string& name, const RangePartitionBook& book,
                                   int64_t dim, IdLookup lookup = IdLookup::kCopyToHost);
  // Attaches to the tensor named `name`, created earlier on this transport.
  static Result<DistTensor> Attach(Transport& transport, const std::string& name,
                                   IdLookup lookup = IdLookup::kCopyToHost);

  const std::string& name() const { return transport_->spec(handle_).name; }
  const RangePartitionBook& book() const { return transport_->spec(handle_).book; }
  int64_t num_rows() const { return book().num_ids(); }
  int64_t dim() const { return transport_->spec(handle_).dim; }
  IdLookup lookup() const { return lookup_; }
  Transport& transport() const { return *transport_; }

  // Returns rows ids (1-D int64, duplicates allowed) in input order, as an
  // ids.numel() x dim float32 tensor on the ids' device.
  Result<Tensor> Pull(const Tensor& ids) const;
  // Overwrites rows ids with `rows` (ids.numel() x dim float32, any device);
  // for a repeated id the last row wins.
  Status Push(const Tensor& ids, const Tensor& rows);
  // Adds `rows` to rows ids; a repeated id adds each of its rows in input order.
  Status PushAdd(const Tensor& ids, const Tensor& rows);

  // Host forms of Pull and Push for callers that already hold host ids.
  Result<std::vector<float>> PullHost(const std::vector<int64_t>& ids) const;
  Status PushHost(const std::vector<int64_t>& ids, const std::vector<float>& rows, WriteMode mode);

 private:
  DistTensor(Transport& transport, int handle, IdLookup lookup)
      : transport_(&transport), handle_(handle), lookup_(lookup) {}
  std::string Where(const char* op) const { return "DistTensor('" + name() + "')." + op; }
  Status PushRows(const Tensor& ids, const Tensor& rows, WriteMode mode);
  Result<std::vector<float>> Read(const IdLocations& at) const;
  Status Write(const IdLocations& at, const float* rows, WriteMode mode);

  Transport* transport_;
  int handle_;
  IdLookup lookup_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_DIST_TENSOR_H_
