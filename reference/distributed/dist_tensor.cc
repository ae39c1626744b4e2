// Implements DistTensor: locate ids, group them by partition, move rows.
#include "reference/distributed/dist_tensor.h"

#include <unordered_map>

namespace faultline {
namespace {

// Positions of the ids that live in each partition, in input order.
std::vector<std::vector<int64_t>> GroupByPartition(const IdLocations& at, int num_partitions) {
  std::vector<std::vector<int64_t>> positions(num_partitions);
  for (size_t i = 0; i < at.partids.size(); ++i) positions[at.partids[i]].push_back(static_cast<int64_t>(i));
  return positions;
}

Status CheckRows(const Tensor& rows, int64_t num_ids, int64_t dim) {
  const std::vector<int64_t> expected{num_ids, dim};
  if (rows.dtype() == DType::kFloat32 && rows.shape() == expected) return OkStatus();
  return InvalidArgumentError("rows has dtype " + std::string(DTypeName(rows.dtype())) + " and shape " +
                              ShapeToString(rows.shape()) + "; expected float32 " + ShapeToString(expected) +
                              " (one row of dim " + std::to_string(dim) + " per id)");
}

}  // namespace

Result<DistTensor> DistTensor::Create(Transport& transport, const std::string& name, const RangePartitionBook& book,
                                      int64_t dim, IdLookup lookup) {
  FL_ASSIGN_OR_RETURN(int handle, transport.CreateTensor(TensorSpec{name, book, dim}));
  return DistTensor(transport, handle, lookup);
}

Result<DistTensor> DistTensor::Attach(Transport& transport, const std::string& name, IdLookup lookup) {
  FL_ASSIGN_OR_RETURN(int handle, transport.FindTensor(name));
  return DistTensor(transport, handle, lookup);
}

Result<std::vector<float>> DistTensor::Read(const IdLocations& at) const {
  const int64_t d = dim();
  std::vector<float> out(at.partids.size() * d);
  std::vector<std::vector<int64_t>> positions = GroupByPartition(at, book().num_partitions());
  std::vector<float> rows;
  for (int p = 0; p < book().num_partitions(); ++p) {
    if (positions[p].empty()) continue;
    std::vector<int64_t> local(positions[p].size());
    for (size_t i = 0; i < local.size(); ++i) local[i] = at.localids[positions[p][i]];
    rows.resize(local.size() * d);
    FL_RETURN_IF_ERROR(transport_->ReadRows(handle_, p, local, rows.data()));
    for (size_t i = 0; i < local.size(); ++i) {
      std::copy(rows.begin() + i * d, rows.begin() + (i + 1) * d, out.begin() + positions[p][i] * d);
    }
  }
  return out;
}

// Overwrite sends each id once (its last row); add sends rounds: round k
// holds every id's k-th row, so each id's rows are added in input order.
Status DistTensor::Write(const IdLocations& at, const float* rows, WriteMode mode) {
  const int64_t d = dim();
  std::vector<std::vector<int64_t>> positions = GroupByPartition(at, book().num_partitions());
  for (int p = 0; p < book().num_partitions(); ++p) {
    std::vector<RowBatch> rounds;
    std::unordered_map<int64_t, size_t> seen;  // local id -> occurrences so far (add) or slot (overwrite)
    for (int64_t position : positions[p]) {
      const int64_t local = at.localids[position];
      const float* row = rows + position * d;
      auto [it, first] = seen.emplace(local, 0);
      if (mode == WriteMode::kOverwrite && !first) {
        std::copy(row, row + d, rounds[0].rows.begin() + it->second * d);
        continue;
      }
      const size_t round = mode == WriteMode::kAdd ? it->second++ : 0;
      if (round == rounds.size()) rounds.emplace_back();
      if (mode == WriteMode::kOverwrite) it->second = rounds[0].ids.size();
      rounds[round].ids.push_back(local);
      rounds[round].rows.insert(rounds[round].rows.end(), row, row + d);
    }
    for (const RowBatch& batch : rounds) {
      FL_RETURN_IF_ERROR(transport_->WriteRows(handle_, p, batch.ids, batch.rows.data(), mode));
    }
  }
  return OkStatus();
}

Result<Tensor> DistTensor::Pull(const Tensor& ids) const {
  Status checked = CheckIdTensor(ids);
  if (!checked.ok()) return checked.WithContext(Where("pull"));
  Result<IdLocations> at = book().Locate(ids, lookup_);
  if (!at.ok()) return at.status().WithContext(Where("pull"));
  Result<std::vector<float>> rows = Read(*at);
  if (!rows.ok()) return rows.status().WithContext(Where("pull"));
  FL_ASSIGN_OR_RETURN(Tensor host, Tensor::FromVector(*rows, {ids.numel(), dim()}));
  return host.To(ids.device(), ids.runtime());
}

Status DistTensor::Push(const Tensor& ids, const Tensor& rows) { return PushRows(ids, rows, WriteMode::kOverwrite); }

Status DistTensor::PushAdd(const Tensor& ids, const Tensor& rows) { return PushRows(ids, rows, WriteMode::kAdd); }

Status DistTensor::PushRows(const Tensor& ids, const Tensor& rows, WriteMode mode) {
  const std::string where = Where(mode == WriteMode::kAdd ? "push_add" : "push");
  FL_RETURN_IF_ERROR(CheckIdTensor(ids).WithContext(where));
  FL_RETURN_IF_ERROR(CheckRows(rows, ids.numel(), dim()).WithContext(where));
  Result<IdLocations> at = book().Locate(ids, lookup_);
  if (!at.ok()) return at.status().WithContext(where);
  FL_ASSIGN_OR_RETURN(Tensor host_rows, rows.Cpu());
  return Write(*at, static_cast<const float*>(host_rows.raw_data()), mode).WithContext(where);
}

Result<std::vector<float>> DistTensor::PullHost(const std::vector<int64_t>& ids) const {
  FL_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector(ids));
  Result<IdLocations> at = book().Locate(t, IdLookup::kCopyToHost);
  if (!at.ok()) return at.status().WithContext(Where("pull"));
  Result<std::vector<float>> rows = Read(*at);
  if (!rows.ok()) return rows.status().WithContext(Where("pull"));
  return rows;
}

Status DistTensor::PushHost(const std::vector<int64_t>& ids, const std::vector<float>& rows, WriteMode mode) {
  const char* op = mode == WriteMode::kAdd ? "push_add" : "push";
  if (rows.size() != ids.size() * static_cast<size_t>(dim())) {
    return InvalidArgumentError("rows hold " + std::to_string(rows.size()) + " values; expected " +
                                std::to_string(ids.size()) + " ids x dim " + std::to_string(dim()))
        .WithContext(Where(op));
  }
  FL_ASSIGN_OR_RETURN(Tensor t, Tensor::FromVector(ids));
  Result<IdLocations> at = book().Locate(t, IdLookup::kCopyToHost);
  if (!at.ok()) return at.status().WithContext(Where(op));
  return Write(*at, rows.data(), mode).WithContext(Where(op));
}

}  // namespace faultline
