// Implements Tensor storage, copies between devices and pinning.
#include "reference/tensor/tensor.h"

#include <unistd.h>

#include <cstdlib>

namespace faultline {

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string Device::ToString() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

// Note [Pin ownership per process]
// Pinning (cudaHostRegister) belongs to the process that pinned: CUDA keeps
// the registration in that process's driver state. A forked child inherits
// the bytes but not the registration (its CUDA calls fail with 3, see Note
// [Fork poisoning] in docs/simcuda.md), and a spawned process that unpins
// memory it never pinned gets 713. So a pinned range is unpinned only by the
// process that pinned it: pinned_by records that pid, and a forked copy of
// this object must not unpin the parent's. The loader's pin handling
// (reference/loader/dispatch.h) and repro F2 rely on this note.
//
// Owns the bytes. Host memory is freed with free(); device memory by the
// runtime that allocated it.
struct Tensor::Storage {
  void* data = nullptr;
  size_t bytes = 0;
  Device device;
  DeviceRuntime* runtime = nullptr;  // the device runtime, or the pinning runtime
  pid_t pinned_by = 0;

  ~Storage() {
    if (pinned_by != 0 && pinned_by == getpid()) (void)runtime->HostUnregister(data);
    if (device.is_cpu()) {
      std::free(data);
    } else if (data != nullptr) {
      (void)runtime->Free(data);
    }
  }
};

Tensor::Tensor() : storage_(std::make_shared<Storage>()) {}

Result<Tensor> Tensor::Empty(DType dtype, std::vector<int64_t> shape, Device device, DeviceRuntime* runtime) {
  int64_t numel = 1;
  bool overflow = false;
  bool has_zero = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return InvalidArgumentError("Tensor::Empty: shape[" + std::to_string(i) + "] is " + std::to_string(shape[i]) +
                                  "; expected a size >= 0");
    }
    has_zero |= shape[i] == 0;
    overflow |= __builtin_mul_overflow(numel, shape[i], &numel);
  }
  // Unchecked, the product wraps: {1 << 62} float32 gave 0 bytes and an OK
  // tensor with null data. A zero dimension makes any product 0.
  int64_t bytes = 0;
  if (has_zero) {
    numel = 0;
  } else if (overflow || __builtin_mul_overflow(numel, static_cast<int64_t>(DTypeSize(dtype)), &bytes)) {
    return InvalidArgumentError("Tensor::Empty: shape " + ShapeToString(shape) + " of dtype " + DTypeName(dtype) +
                                " needs more than 2^63-1 bytes (the element or byte count overflows int64); "
                                "expected a shape whose byte count fits in int64");
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = numel;
  Storage& s = *t.storage_;
  s.device = device;
  s.bytes = t.nbytes();
  if (device.is_cpu()) {
    // 64-byte alignment keeps pinned ranges and SIMD loads happy.
    s.data = s.bytes == 0 ? nullptr : std::aligned_alloc(64, (s.bytes + 63) / 64 * 64);
    if (s.bytes != 0 && s.data == nullptr) {
      return UnavailableError("Tensor::Empty: cannot allocate " + std::to_string(s.bytes) + " host bytes");
    }
    return t;
  }
  if (runtime == nullptr || runtime->kind() == RuntimeKind::kCpu) {
    return InvalidArgumentError("Tensor::Empty: a tensor on " + device.ToString() +
                                " needs a device runtime (simcuda or cuda)");
  }
  s.runtime = runtime;
  if (s.bytes == 0) return t;
  DeviceGuard guard(*runtime, device.index);
  FL_RETURN_IF_ERROR(guard.status());
  FL_ASSIGN_OR_RETURN(s.data, runtime->Malloc(s.bytes));
  return t;
}

Device Tensor::device() const { return storage_->device; }
DeviceRuntime* Tensor::runtime() const { return storage_->runtime; }
bool Tensor::is_pinned() const { return storage_->pinned_by != 0; }
pid_t Tensor::pinned_by() const { return storage_->pinned_by; }
void* Tensor::raw_data() const { return storage_->data; }

Status Tensor::CheckHostView(DType wanted) const {
  if (!device().is_cpu()) {
    // PyTorch's wording, which the F3 repro matches.
    return FailedPreconditionError("can't convert " + device().ToString() +
                                   " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host "
                                   "memory first.");
  }
  if (wanted != dtype_) {
    return InvalidArgumentError(std::string("host view as ") + DTypeName(wanted) + " of a tensor of dtype " +
                                DTypeName(dtype_));
  }
  return OkStatus();
}

Result<Tensor> Tensor::Prefix(int64_t length) const {
  if (shape_.empty()) return InvalidArgumentError("Tensor::Prefix: a 0-d tensor; expected at least one dimension");
  if (length < 0 || length > shape_[0]) {
    return InvalidArgumentError("Tensor::Prefix: length " + std::to_string(length) + " of a tensor of shape " +
                                ShapeToString(shape_) + "; expected a length in [0, " + std::to_string(shape_[0]) +
                                "]");
  }
  Tensor view = *this;
  view.shape_[0] = length;
  view.numel_ = 1;
  for (int64_t size : view.shape_) view.numel_ *= size;  // no larger than numel_: cannot overflow
  return view;
}

Result<Tensor> Tensor::To(Device target, DeviceRuntime* runtime) const {
  if (target == device()) return *this;
  DeviceRuntime* rt = device().is_cpu() ? runtime : storage_->runtime;
  if (!target.is_cpu() && !device().is_cpu() && runtime != nullptr && runtime != rt) {
    return InvalidArgumentError("Tensor::To: cannot copy between two different device runtimes");
  }
  FL_ASSIGN_OR_RETURN(Tensor out, Empty(dtype_, shape_, target, rt));
  if (nbytes() == 0) return out;
  MemcpyKind kind = device().is_cpu() ? MemcpyKind::kHostToDevice
                    : target.is_cpu() ? MemcpyKind::kDeviceToHost
                                      : MemcpyKind::kDeviceToDevice;
  FL_RETURN_IF_ERROR(rt->Memcpy(out.raw_data(), raw_data(), nbytes(), kind));
  return out;
}

Status Tensor::Pin(DeviceRuntime& runtime) {
  if (!device().is_cpu()) return InvalidArgumentError("Pin: tensor is on " + device().ToString() + ", not the host");
  if (is_pinned()) {
    return FailedPreconditionError("Pin: tensor is already pinned by pid " + std::to_string(pinned_by()));
  }
  if (nbytes() == 0) return InvalidArgumentError("Pin: tensor is empty");
  FL_RETURN_IF_ERROR(runtime.HostRegister(raw_data(), nbytes()));
  storage_->runtime = &runtime;
  storage_->pinned_by = getpid();
  return OkStatus();
}

Status Tensor::Unpin() {
  if (!is_pinned()) return FailedPreconditionError("Unpin: tensor is not pinned");
  FL_RETURN_IF_ERROR(storage_->runtime->HostUnregister(raw_data()));
  storage_->pinned_by = 0;
  return OkStatus();
}

}  // namespace faultline
