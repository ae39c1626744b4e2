// Implements IndexSelect and FeatureStore.
#include "reference/features/feature_store.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>

#include "kernels/gather_kernels.cuh"
#include "kernels/id_check.h"
#include "kernels/launch.h"

namespace faultline {
namespace {

Status OutOfRangeId(int64_t position, int64_t id, int64_t rows) {
  return OutOfRangeError("ids[" + std::to_string(position) + "] is " + std::to_string(id) + "; expected a row in [0, " +
                         std::to_string(rows) + ")");
}

// Checks every id against the table's rows: on the host, or by a kernel on
// the ids' device.
Status CheckIds(const Tensor& table, const Tensor& ids) {
  const int64_t rows = table.shape()[0], n = ids.numel();
  if (ids.device().is_cpu()) {
    FL_ASSIGN_OR_RETURN(const int64_t* id, ids.HostData<int64_t>());
    for (int64_t i = 0; i < n; ++i) {
      if (id[i] < 0 || id[i] >= rows) return OutOfRangeId(i, id[i], rows);
    }
    return OkStatus();
  }
  DeviceRuntime& rt = *ids.runtime();
  DeviceGuard guard(rt, ids.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  FL_ASSIGN_OR_RETURN(const std::optional<kernels::BadId> bad,
                      kernels::FirstIdOutside(rt, static_cast<const int64_t*>(ids.raw_data()), n, rows));
  return bad ? OutOfRangeId(bad->position, bad->value, rows) : OkStatus();
}

// Queues the kernel that copies rows `ids` of `table` into `out` on the ids'
// device, reading device memory or pinned host memory; with `verdict`, it
// writes nothing when that check found a bad id (GatherRowsKernel). The
// caller holds the device guard.
Status LaunchGather(const Tensor& table, const Tensor& ids, Tensor& out, const unsigned long long* verdict) {
  const int64_t dim = table.shape()[1], n = ids.numel();
  // Nothing to copy, and no table buffer to name: an empty tensor's data is null.
  if (n == 0 || dim == 0) return OkStatus();
  const BufferUse verdict_use{verdict, verdict != nullptr ? sizeof(*verdict) : 0};
  return kernels::LaunchKernel(*ids.runtime(), "GatherRowsKernel", kernels::LaunchFor(static_cast<uint64_t>(n) * dim),
                               kernels::GatherRowsKernel{static_cast<const float*>(table.raw_data()), dim,
                                                         static_cast<const int64_t*>(ids.raw_data()), n,
                                                         static_cast<float*>(out.raw_data()), verdict},
                               {table.buffer(), ids.buffer(), out.buffer(), verdict_use},
                               &kernels::LaunchGatherRowsOnCuda);
}

// Copies rows `ids` (checked) of `table` into `out`: on the host, or by a
// kernel on the ids' device.
Status CopyRows(const Tensor& table, const Tensor& ids, Tensor& out) {
  const int64_t dim = table.shape()[1], n = ids.numel();
  // Nothing to copy (and no buffer: an empty tensor's data may be null, which
  // memcpy must not be given even for 0 bytes).
  if (n == 0 || dim == 0) return OkStatus();
  if (ids.device().is_cpu()) {
    const auto* id = static_cast<const int64_t*>(ids.raw_data());
    const auto* src = static_cast<const float*>(table.raw_data());
    auto* dst = static_cast<float*>(out.raw_data());
    const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
    for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dim, src + id[i] * dim, row_bytes);
    return OkStatus();
  }
  DeviceGuard guard(*ids.runtime(), ids.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  return LaunchGather(table, ids, out, /*verdict=*/nullptr);
}

// Gathers rows `ids` of `table` into `out` on the ids' device: the check
// and the gather queued together (the gather writes nothing if an id is
// bad), then one wait to read the verdict. In the scratch's words, or in a
// device word of its own.
Status CheckAndGatherOnDevice(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch* scratch) {
  const int64_t rows = table.shape()[0], n = ids.numel();
  if (n == 0) return OkStatus();
  DeviceRuntime& rt = *ids.runtime();
  DeviceGuard guard(rt, ids.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  kernels::IdCheckWords words;
  Tensor own_word;  // without a scratch: freed on return
  unsigned long long own_verdict = 0;
  if (scratch != nullptr) {
    FL_ASSIGN_OR_RETURN(words, scratch->Words(rt, ids.device()));
  } else {
    FL_ASSIGN_OR_RETURN(own_word, Tensor::Empty(DType::kInt64, {1}, ids.device(), &rt));
    words = kernels::IdCheckWords{static_cast<unsigned long long*>(own_word.raw_data()), &own_verdict};
  }
  const auto* id = static_cast<const int64_t*>(ids.raw_data());
  FL_RETURN_IF_ERROR(kernels::QueueIdCheck(rt, id, n, rows, words));
  FL_RETURN_IF_ERROR(LaunchGather(table, ids, out, words.device));
  FL_ASSIGN_OR_RETURN(const std::optional<kernels::BadId> bad, kernels::ReadIdCheck(rt, id, n, words));
  return bad ? OutOfRangeId(bad->position, bad->value, rows) : OkStatus();
}

// Returns "simcuda runtime 0x..." (the kind and the instance).
std::string RuntimeText(const DeviceRuntime* runtime) {
  std::ostringstream os;
  os << (runtime != nullptr ? runtime->name() : "no") << " runtime " << static_cast<const void*>(runtime);
  return os.str();
}

// Checks that `tensor` (on a device, or pinned) belongs to the runtime
// instance of the device ids: Device equality compares type and index only,
// and a kernel given another instance's memory faults (Tensor::To refuses
// mixed runtimes too).
Status CheckSameRuntime(const std::string& op, const std::string& what, const Tensor& tensor, const Tensor& ids) {
  if (tensor.runtime() == ids.runtime()) return OkStatus();
  const std::string where = tensor.device().is_cpu() ? "cpu, pinned" : tensor.device().ToString();
  return InvalidArgumentError(op + ": " + what + " (" + where + ") belongs to " + RuntimeText(tensor.runtime()) +
                              " but the ids (" + ids.device().ToString() + ") to " + RuntimeText(ids.runtime()) +
                              "; expected tensors of one runtime instance (copy through the host)");
}

// Refuses an `out` whose bytes overlap those of `input` (`what`): rows
// copied onto rows still to be read (the host's memcpy of overlapping
// ranges is undefined; a kernel's threads race).
Status CheckSeparate(const Tensor& out, const Tensor& input, const std::string& what) {
  if (out.nbytes() == 0 || input.nbytes() == 0) return OkStatus();
  const auto o = reinterpret_cast<uintptr_t>(out.raw_data()), i = reinterpret_cast<uintptr_t>(input.raw_data());
  if (o < i + input.nbytes() && i < o + out.nbytes()) {
    return InvalidArgumentError("IndexSelectInto: out shares memory with " + what + "; expected a separate buffer");
  }
  return OkStatus();
}

// Checks the table and ids of an IndexSelect (dtypes, shapes, whether the
// ids' device can read the table).
Status CheckIndexSelect(const Tensor& table, const Tensor& ids) {
  if (table.dtype() != DType::kFloat32 || table.shape().size() != 2) {
    return InvalidArgumentError(std::string("IndexSelect: table must be a 2-D float32 tensor, got ") +
                                DTypeName(table.dtype()) + " with " + std::to_string(table.shape().size()) +
                                " dimensions");
  }
  if (ids.dtype() != DType::kInt64 || ids.shape().size() != 1) {
    return InvalidArgumentError(std::string("IndexSelect: ids must be a 1-D int64 tensor, got ") +
                                DTypeName(ids.dtype()) + " with " + std::to_string(ids.shape().size()) + " dimensions");
  }
  if (ids.device().is_cpu()) {
    if (!table.device().is_cpu()) {
      return InvalidArgumentError("IndexSelect: ids are on cpu but the table is on " + table.device().ToString() +
                                  "; move the ids to " + table.device().ToString() + " first");
    }
    return OkStatus();
  }
  const bool readable = table.device() == ids.device() || (table.device().is_cpu() && table.is_pinned());
  if (!readable) {
    return InvalidArgumentError("IndexSelect: ids are on " + ids.device().ToString() + " but the table is on " +
                                table.device().ToString() +
                                (table.device().is_cpu() ? " and not pinned; pin it or copy it to the device"
                                                         : "; both must be on the same device"));
  }
  return CheckSameRuntime("IndexSelect", "the table", table, ids);
}

}  // namespace

// The ids are checked before the result is allocated: a bad id allocates nothing.
Result<Tensor> IndexSelect(const Tensor& table, const Tensor& ids) {
  FL_RETURN_IF_ERROR(CheckIndexSelect(table, ids));
  FL_RETURN_IF_ERROR(CheckIds(table, ids));
  FL_ASSIGN_OR_RETURN(Tensor out, Tensor::Empty(DType::kFloat32, {ids.numel(), table.shape()[1]}, ids.device(),
                                                ids.device().is_cpu() ? nullptr : ids.runtime()));
  FL_RETURN_IF_ERROR(CopyRows(table, ids, out));
  return out;
}

namespace {

// Checks the arguments of IndexSelectInto (`op` names the call): the
// table and ids as IndexSelect's, and `out`.
Status CheckIndexSelectInto(const std::string& op, const Tensor& table, const Tensor& ids, const Tensor& out) {
  FL_RETURN_IF_ERROR(CheckIndexSelect(table, ids));
  const std::vector<int64_t> shape = {ids.numel(), table.shape()[1]};
  if (out.dtype() != DType::kFloat32 || out.shape() != shape || out.device() != ids.device()) {
    return InvalidArgumentError(op + ": out must be a float32 tensor of shape " + ShapeToString(shape) + " on " +
                                ids.device().ToString() + " (where the ids are), got " + DTypeName(out.dtype()) + " " +
                                ShapeToString(out.shape()) + " on " + out.device().ToString());
  }
  if (!ids.device().is_cpu()) FL_RETURN_IF_ERROR(CheckSameRuntime(op, "out", out, ids));
  return CheckSeparate(out, table, "the table");
}

}  // namespace

Status IndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch* scratch) {
  FL_RETURN_IF_ERROR(CheckIndexSelectInto("IndexSelectInto", table, ids, out));
  if (!ids.device().is_cpu()) return CheckAndGatherOnDevice(table, ids, out, scratch);
  FL_RETURN_IF_ERROR(CheckIds(table, ids));
  return CopyRows(table, ids, out);
}

Status QueueIndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch& scratch) {
  if (scratch.queued_) {
    return FailedPreconditionError(
        "QueueIndexSelectInto: the scratch's last queued gather has no verdict yet; expected GatherScratch::Verdict "
        "first");
  }
  FL_RETURN_IF_ERROR(CheckIndexSelectInto("QueueIndexSelectInto", table, ids, out));
  if (ids.device().is_cpu()) {
    return InvalidArgumentError(
        "QueueIndexSelectInto: ids are on cpu; expected device ids (IndexSelectInto gathers host ids at once)");
  }
  DeviceRuntime& rt = *ids.runtime();
  const int64_t rows = table.shape()[0], n = ids.numel();
  const auto* id = static_cast<const int64_t*>(ids.raw_data());
  if (n > 0) {
    DeviceGuard guard(rt, ids.device().index);
    FL_RETURN_IF_ERROR(guard.status());
    FL_ASSIGN_OR_RETURN(const kernels::IdCheckWords words, scratch.Words(rt, ids.device()));
    if (!scratch.landed_) {
      FL_ASSIGN_OR_RETURN(void* event, rt.EventCreate());
      scratch.landed_ = std::unique_ptr<void, GatherScratch::EventDestroyer>(event, GatherScratch::EventDestroyer{&rt});
    }
    FL_RETURN_IF_ERROR(kernels::QueueIdCheck(rt, id, n, rows, words));
    FL_RETURN_IF_ERROR(LaunchGather(table, ids, out, words.device));
    FL_RETURN_IF_ERROR(kernels::QueueIdCheckCopy(rt, n, words));
    FL_RETURN_IF_ERROR(rt.EventRecord(scratch.landed_.get(), /*stream=*/nullptr));
  }
  scratch.queued_ = GatherScratch::Queued{&rt, id, n, rows};
  return OkStatus();
}

Status GatherScratch::Verdict() {
  if (!queued_) {
    return FailedPreconditionError(
        "GatherScratch::Verdict: no queued gather awaits its verdict; expected a QueueIndexSelectInto first");
  }
  const Queued q = *queued_;
  queued_.reset();
  if (q.n == 0) return OkStatus();
  DeviceRuntime& rt = *q.runtime;
  DeviceGuard guard(rt, device_word_.device().index);
  FL_RETURN_IF_ERROR(guard.status());
  // Landed already when the host has waited for the stream since; else wait.
  if (!rt.EventQuery(landed_.get()).ok()) FL_RETURN_IF_ERROR(rt.EventSynchronize(landed_.get()));
  const kernels::IdCheckWords words{static_cast<unsigned long long*>(device_word_.raw_data()),
                                    static_cast<unsigned long long*>(host_word_.raw_data())};
  FL_ASSIGN_OR_RETURN(const std::optional<kernels::BadId> bad, kernels::LandedIdCheck(rt, q.ids, q.n, words));
  return bad ? OutOfRangeId(bad->position, bad->value, q.rows) : OkStatus();
}

void GatherScratch::EventDestroyer::operator()(void* event) const {
  if (runtime != nullptr && event != nullptr) (void)runtime->EventDestroy(event);
}

Result<kernels::IdCheckWords> GatherScratch::Words(DeviceRuntime& runtime, Device device) {
  if (device.is_cpu()) {
    return InvalidArgumentError("GatherScratch::Words: device cpu; expected the cuda device of the ids");
  }
  if (device_word_.numel() > 0 && (device_word_.device() != device || device_word_.runtime() != &runtime)) {
    return InvalidArgumentError("GatherScratch: holds words on " + device_word_.device().ToString() + " of " +
                                RuntimeText(device_word_.runtime()) + "; asked for " + device.ToString() + " of " +
                                RuntimeText(&runtime));
  }
  if (device_word_.numel() == 0) {
    FL_ASSIGN_OR_RETURN(Tensor word, Tensor::Empty(DType::kInt64, {1}, device, &runtime));
    FL_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(DType::kInt64, {1}));
    FL_RETURN_IF_ERROR(host.Pin(runtime));
    device_word_ = std::move(word);
    host_word_ = std::move(host);
  }
  return kernels::IdCheckWords{static_cast<unsigned long long*>(device_word_.raw_data()),
                               static_cast<unsigned long long*>(host_word_.raw_data())};
}

Status FeatureStore::Add(const std::string& name, Tensor table) {
  if (table.dtype() != DType::kFloat32 || table.shape().size() != 2) {
    return InvalidArgumentError("FeatureStore::Add: feature '" + name + "' must be a 2-D float32 tensor, got " +
                                DTypeName(table.dtype()) + " of shape " + ShapeToString(table.shape()));
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
