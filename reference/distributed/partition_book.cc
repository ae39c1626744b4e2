// Implements RangePartitionBook and IdLookup.
#include "reference/distributed/partition_book.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>

#include "kernels/id_check.h"
#include "kernels/launch.h"
#include "kernels/partition_kernels.cuh"

namespace faultline {

const char* IdLookupName(IdLookup lookup) {
  switch (lookup) {
    case IdLookup::kHostView: return "host-view";
    case IdLookup::kCopyToHost: return "copy-to-host";
    case IdLookup::kOnDevice: return "on-device";
  }
  return "?";
}

Result<IdLookup> ParseIdLookup(std::string_view text, std::string_view what) {
  for (IdLookup lookup : {IdLookup::kHostView, IdLookup::kCopyToHost, IdLookup::kOnDevice}) {
    if (text == IdLookupName(lookup)) return lookup;
  }
  return InvalidArgumentError(std::string(what) + " is '" + std::string(text) +
                              "'; expected host-view, copy-to-host or on-device");
}

Status CheckIdTensor(const Tensor& ids, const std::string& what) {
  if (ids.dtype() == DType::kInt64 && ids.shape().size() == 1) return OkStatus();
  return InvalidArgumentError(what + " has dtype " + DTypeName(ids.dtype()) + " and shape " +
                              ShapeToString(ids.shape()) + "; expected a 1-D int64 tensor");
}

Result<RangePartitionBook> RangePartitionBook::Create(std::vector<int64_t> ends) {
  if (ends.empty()) return InvalidArgumentError("partition ends are empty; expected at least one partition");
  if (ends.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("partition ends hold " + std::to_string(ends.size()) + " partitions; too many");
  }
  for (size_t p = 0; p < ends.size(); ++p) {
    const int64_t previous = p == 0 ? 0 : ends[p - 1];
    if (ends[p] < previous) {
      return InvalidArgumentError("partition ends[" + std::to_string(p) + "] is " + std::to_string(ends[p]) +
                                  "; expected >= " + std::to_string(previous) + " (ends never decrease)");
    }
  }
  return RangePartitionBook(std::move(ends));
}

Result<RangePartitionBook> RangePartitionBook::Even(int64_t num_ids, int num_partitions) {
  if (num_partitions < 1) {
    return InvalidArgumentError("num_partitions is " + std::to_string(num_partitions) + "; expected >= 1");
  }
  if (num_ids < 0) return InvalidArgumentError("num_ids is " + std::to_string(num_ids) + "; expected >= 0");
  std::vector<int64_t> ends(num_partitions);
  for (int p = 0; p < num_partitions; ++p) {
    ends[p] = num_ids / num_partitions * (p + 1) + std::min<int64_t>(p + 1, num_ids % num_partitions);
  }
  return Create(std::move(ends));
}

int RangePartitionBook::PartitionOf(int64_t id) const {
  return static_cast<int>(std::upper_bound(ends_.begin(), ends_.end(), id) - ends_.begin());
}

Status RangePartitionBook::OutOfRange(int64_t position, int64_t id) const {
  return OutOfRangeError("ids[" + std::to_string(position) + "] is " + std::to_string(id) + "; expected an id in [0, " +
                         std::to_string(num_ids()) + ") (the partition book covers " + std::to_string(num_ids()) +
                         " ids in " + std::to_string(num_partitions()) + " partitions)");
}

Status RangePartitionBook::CheckInRange(const int64_t* ids, int64_t n) const {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= num_ids()) return OutOfRange(i, ids[i]);
  }
  return OkStatus();
}

IdLocations RangePartitionBook::LocateHost(const int64_t* ids, int64_t n) const {
  IdLocations out;
  out.partids.resize(n);
  out.localids.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    const int p = PartitionOf(ids[i]);
    out.partids[i] = p;
    out.localids[i] = ids[i] - start(p);
  }
  return out;
}

Result<Tensor> RangePartitionBook::Nid2PartId(const Tensor& ids) const {
  FL_RETURN_IF_ERROR(CheckIdTensor(ids));
  Result<const int64_t*> view = ids.HostData<int64_t>();  // DGL: nids.numpy()
  if (!view.ok()) return view.status().WithContext("nid2partid");
  FL_RETURN_IF_ERROR(CheckInRange(*view, ids.numel()).WithContext("nid2partid"));
  FL_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(DType::kInt64, {ids.numel()}));
  auto* partids = static_cast<int64_t*>(out.raw_data());
  for (int64_t i = 0; i < ids.numel(); ++i) partids[i] = PartitionOf((*view)[i]);
  return out;
}

Result<Tensor> RangePartitionBook::Nid2LocalId(const Tensor& ids, int partid) const {
  FL_RETURN_IF_ERROR(CheckIdTensor(ids));
  if (partid < 0 || partid >= num_partitions()) {
    return OutOfRangeError("nid2localid: partid is " + std::to_string(partid) + "; expected one of [0, " +
                           std::to_string(num_partitions()) + ")");
  }
  Result<const int64_t*> view = ids.HostData<int64_t>();
  if (!view.ok()) return view.status().WithContext("nid2localid");
  FL_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(DType::kInt64, {ids.numel()}));
  auto* local = static_cast<int64_t*>(out.raw_data());
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int64_t id = (*view)[i];
    if (id < start(partid) || id >= ends_[partid]) {
      return OutOfRangeError("nid2localid: ids[" + std::to_string(i) + "] is " + std::to_string(id) + "; partition " +
                             std::to_string(partid) + " owns [" + std::to_string(start(partid)) + ", " +
                             std::to_string(ends_[partid]) + ")");
    }
    local[i] = id - start(partid);
  }
  return out;
}

Result<std::pair<Tensor, Tensor>> RangePartitionBook::LocateOnDevice(const Tensor& ids) const {
  FL_RETURN_IF_ERROR(CheckIdTensor(ids));
  if (ids.device().is_cpu()) {
    return InvalidArgumentError("LocateOnDevice: ids are on cpu; expected ids on a device (use Locate for host ids)");
  }
  DeviceRuntime& rt = *ids.runtime();
  DeviceGuard guard(rt, ids.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  const int64_t n = ids.numel();
  const auto* id = static_cast<const int64_t*>(ids.raw_data());
  FL_ASSIGN_OR_RETURN(const std::optional<kernels::BadId> bad, kernels::FirstIdOutside(rt, id, n, ends_.back()));
  if (bad) return OutOfRange(bad->position, bad->value);
  FL_ASSIGN_OR_RETURN(Tensor ends, Tensor::FromVectorOn(ends_, ids.device(), &rt));
  FL_ASSIGN_OR_RETURN(Tensor partids, Tensor::Empty(DType::kInt64, {n}, ids.device(), &rt));
  FL_ASSIGN_OR_RETURN(Tensor localids, Tensor::Empty(DType::kInt64, {n}, ids.device(), &rt));
  if (n > 0) {
    const auto* end = static_cast<const int64_t*>(ends.raw_data());
    auto* part = static_cast<int64_t*>(partids.raw_data());
    auto* local = static_cast<int64_t*>(localids.raw_data());
    FL_RETURN_IF_ERROR(kernels::LaunchKernel(rt, "RangeLocateKernel", kernels::LaunchFor(n),
                                             kernels::RangeLocateKernel{id, n, end, num_partitions(), part, local},
                                             {ids.buffer(), ends.buffer(), partids.buffer(), localids.buffer()},
                                             &kernels::LaunchRangeLocateOnCuda));
  }
  return std::make_pair(std::move(partids), std::move(localids));
}

Result<IdLocations> RangePartitionBook::Locate(const Tensor& ids, IdLookup lookup) const {
  FL_RETURN_IF_ERROR(CheckIdTensor(ids));
  if (lookup == IdLookup::kOnDevice && !ids.device().is_cpu()) {
    Result<std::pair<Tensor, Tensor>> located_or = LocateOnDevice(ids);
    if (!located_or.ok()) return located_or.status().WithContext("nid2partid");
    std::pair<Tensor, Tensor>& located = *located_or;
    FL_ASSIGN_OR_RETURN(Tensor partids, located.first.Cpu());
    FL_ASSIGN_OR_RETURN(Tensor localids, located.second.Cpu());
    IdLocations out;
    FL_ASSIGN_OR_RETURN(out.localids, localids.ToVector<int64_t>());
    FL_ASSIGN_OR_RETURN(std::vector<int64_t> parts, partids.ToVector<int64_t>());
    out.partids.assign(parts.begin(), parts.end());
    return out;
  }
  Tensor host = ids;
  if (lookup != IdLookup::kHostView) {
    FL_ASSIGN_OR_RETURN(host, ids.Cpu());  // DGL 2.2.1: F.astype(F.copy_to(nids, F.cpu()), F.int64)
  }
  Result<const int64_t*> view = host.HostData<int64_t>();  // DGL 2.1.0 stopped here for device ids
  if (!view.ok()) return view.status().WithContext("nid2partid");
  FL_RETURN_IF_ERROR(CheckInRange(*view, host.numel()).WithContext("nid2partid"));
  return LocateHost(*view, host.numel());
}

}  // namespace faultline
