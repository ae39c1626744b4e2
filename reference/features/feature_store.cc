// Implements IndexSelect and FeatureStore.
#include "reference/features/feature_store.h"

#include <cstring>
#include <optional>

#include "kernels/gather_kernels.cuh"
#include "kernels/id_check.h"
#include "kernels/launch.h"

namespace faultline {
namespace {

Status OutOfRangeId(int64_t position, int64_t id, int64_t rows) {
  return OutOfRangeError("ids[" + std::to_string(position) + "] is " + std::to_string(id) +
                         "; expected a row in [0, " + std::to_string(rows) + ")");
}

Result<Tensor> GatherOnHost(const Tensor& table, const Tensor& ids) {
  const int64_t rows = table.shape()[0], dim = table.shape()[1], n = ids.numel();
  FL_ASSIGN_OR_RETURN(const int64_t* id, ids.HostData<int64_t>());
  for (int64_t i = 0; i < n; ++i) {
    if (id[i] < 0 || id[i] >= rows) return OutOfRangeId(i, id[i], rows);
  }
  FL_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(DType::kFloat32, {n, dim}));
  const auto* src = static_cast<const float*>(table.raw_data());
  auto* dst = static_cast<float*>(out.raw_data());
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dim, src + id[i] * dim, row_bytes);
  return out;
}

// Gathers on the ids' device; the table is device memory or pinned host memory.
Result<Tensor> GatherOnDevice(const Tensor& table, const Tensor& ids) {
  DeviceRuntime& rt = *ids.runtime();
  const int64_t rows = table.shape()[0], dim = table.shape()[1], n = ids.numel();
  DeviceGuard guard(rt, ids.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  const auto* id = static_cast<const int64_t*>(ids.raw_data());

  FL_ASSIGN_OR_RETURN(const std::optional<kernels::BadId> bad, kernels::FirstIdOutside(rt, id, n, rows));
  if (bad) return OutOfRangeId(bad->position, bad->value, rows);

  FL_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(DType::kFloat32, {n, dim}, ids.device(), &rt));
  if (n == 0 || dim == 0) return out;
  auto* dst = static_cast<float*>(out.raw_data());
  const auto* src = static_cast<const float*>(table.raw_data());
  FL_RETURN_IF_ERROR(kernels::LaunchKernel(rt, "GatherRowsKernel", kernels::LaunchFor(static_cast<uint64_t>(n) * dim),
                                           kernels::GatherRowsKernel{src, dim, id, n, dst},
                                           {table.buffer(), ids.buffer(), out.buffer()},
                                           &kernels::LaunchGatherRowsOnCuda));
  return out;
}

}  // namespace

Result<Tensor> IndexSelect(const Tensor& table, const Tensor& ids) {
  if (table.dtype() != DType::kFloat32 || table.shape().size() != 2) {
    return InvalidArgumentError(std::string("IndexSelect: table must be a 2-D float32 tensor, got ") +
                                DTypeName(table.dtype()) + " with " + std::to_string(table.shape().size()) +
                                " dimensions");
  }
  if (ids.dtype() != DType::kInt64 || ids.shape().size() != 1) {
    return InvalidArgumentError(std::string("IndexSelect: ids must be a 1-D int64 tensor, got ") +
                                DTypeName(ids.dtype()) + " with " + std::to_string(ids.shape().size()) +
                                " dimensions");
  }
  if (ids.device().is_cpu()) {
    if (!table.device().is_cpu()) {
      return InvalidArgumentError("IndexSelect: ids are on cpu but the table is on " + table.device().ToString() +
                                  "; move the ids to " + table.device().ToString() + " first");
    }
    return GatherOnHost(table, ids);
  }
  const bool readable = table.device() == ids.device() || (table.device().is_cpu() && table.is_pinned());
  if (!readable) {
    return InvalidArgumentError("IndexSelect: ids are on " + ids.device().ToString() + " but the table is on " +
                                table.device().ToString() +
                                (table.device().is_cpu() ? " and not pinned; pin it or copy it to the device"
                                                         : "; both must be on the same device"));
  }
  return GatherOnDevice(table, ids);
}

Status FeatureStore::Add(const std::string& name, Tensor table) {
  if (table.dtype() != DType::kFloat32 || table.shape().size() != 2) {
    return InvalidArgumentError("FeatureStore::Add: feature '" + name + "' must be a 2-D float32 tensor");
  }
  if (!tables_.emplace(name, std::move(table)).second) {
    return InvalidArgumentError("FeatureStore::Add: feature '" + name + "' already exists");
  }
  return OkStatus();
}

Result<const Tensor*> FeatureStore::Get(const std::string& name) const {
  auto it = tables_.find(name);
  if (it != tables_.end()) return &it->second;
  std::string known;
  for (const auto& [key, value] : tables_) known += (known.empty() ? "" : ", ") + key;
  return NotFoundError("no feature named '" + name + "'; known features: " + (known.empty() ? "(none)" : known));
}

Result<Tensor> FeatureStore::IndexSelect(const std::string& name, const Tensor& ids) const {
  FL_ASSIGN_OR_RETURN(const Tensor* table, Get(name));
  return faultline::IndexSelect(*table, ids);
}

}  // namespace faultline
