// Provides Tensor: a typed, shaped buffer on the host or on a device (of the
// simcuda or cuda runtime), optionally pinned, with explicit copies between
// devices. Host views of device tensors are refused the way PyTorch refuses
// to turn a cuda tensor into a NumPy array.
#ifndef FAULTLINE_REFERENCE_TENSOR_TENSOR_H_
#define FAULTLINE_REFERENCE_TENSOR_TENSOR_H_

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/dtype.h"
#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {

// Returns the shape the way PyTorch prints it: "[3, 128]", "[]".
std::string ShapeToString(const std::vector<int64_t>& shape);

// Where a tensor lives: the host, or device `index` of a device runtime.
struct Device {
  enum class Type { kCpu, kCuda };
  Type type = Type::kCpu;
  int index = -1;

  static Device Cpu() { return Device{}; }
  static Device Cuda(int index) { return Device{Type::kCuda, index}; }
  bool is_cpu() const { return type == Type::kCpu; }
  // Returns "cpu" or "cuda:<index>", as PyTorch prints devices.
  std::string ToString() const;
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
};

class Tensor {
 public:
  Tensor();  // an empty host tensor of int64

  // Allocates an uninitialized tensor. A device tensor needs the runtime
  // (simcuda or cuda) whose device it lives on.
  static Result<Tensor> Empty(DType dtype, std::vector<int64_t> shape, Device device = Device::Cpu(),
                              DeviceRuntime* runtime = nullptr);
  // Copies `values` into a new host tensor (1-D unless `shape` is given).
  template <typename T>
  static Result<Tensor> FromVector(const std::vector<T>& values, std::vector<int64_t> shape = {});
  // Copies host values straight to `device` of `runtime` (the host tensor in
  // between never escapes): one checked step instead of FromVector(...)->To().
  template <typename T>
  static Result<Tensor> FromVectorOn(const std::vector<T>& values, Device device, DeviceRuntime* runtime,
                                     std::vector<int64_t> shape = {});

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * DTypeSize(dtype_); }
  // The bytes as a kernel buffer (DeviceRuntime::Launch checks each one):
  // launches list tensor.buffer() rather than a hand-written pointer and size.
  BufferUse buffer() const { return BufferUse{raw_data(), nbytes()}; }
  Device device() const;
  DeviceRuntime* runtime() const;
  bool is_pinned() const;
  // Returns the pid of the process that pinned this tensor (0 if not pinned).
  pid_t pinned_by() const;

  // Returns the data pointer wherever it lives (for kernels and copies).
  void* raw_data() const;

  // Returns a host view; refuses device tensors and a different dtype.
  template <typename T>
  Result<const T*> HostData() const;
  // Copies a host tensor into a vector (device tensors are refused).
  template <typename T>
  Result<std::vector<T>> ToVector() const;

  // Returns the first `length` entries along dimension 0, sharing this
  // tensor's memory (PyTorch's narrow(0, 0, length)): for a buffer kept
  // from call to call that holds a smaller result each time.
  // 0 <= length <= shape()[0]; a 0-d tensor has no dimension to narrow.
  Result<Tensor> Prefix(int64_t length) const;

  // Copies to `target`; `runtime` is needed when the source is on the host
  // and the target is a device. A tensor already on `target` is shared.
  Result<Tensor> To(Device target, DeviceRuntime* runtime = nullptr) const;
  // Copies to the host (Tensor.cpu()).
  Result<Tensor> Cpu() const { return To(Device::Cpu()); }

  // Pins this host tensor with `runtime` (cudaHostRegister) and records the
  // pinning process as the owner.
  Status Pin(DeviceRuntime& runtime);
  // Unpins with the runtime that pinned it (cudaHostUnregister), from
  // whatever process calls it: pinning is per process, so a process that did
  // not pin the memory gets the runtime's error.
  Status Unpin();

 private:
  struct Storage;
  Status CheckHostView(DType wanted) const;

  DType dtype_ = DType::kInt64;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<Storage> storage_;
};

template <typename T>
Result<Tensor> Tensor::FromVector(const std::vector<T>& values, std::vector<int64_t> shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  FL_ASSIGN_OR_RETURN(Tensor t, Empty(kDTypeOf<T>, shape));
  if (t.numel() != static_cast<int64_t>(values.size())) {
    return InvalidArgumentError("FromVector: shape holds " + std::to_string(t.numel()) + " elements but " +
                                std::to_string(values.size()) + " values were given");
  }
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <typename T>
Result<Tensor> Tensor::FromVectorOn(const std::vector<T>& values, Device device, DeviceRuntime* runtime,
                                    std::vector<int64_t> shape) {
  FL_ASSIGN_OR_RETURN(Tensor host, FromVector(values, std::move(shape)));
  return host.To(device, runtime);
}

template <typename T>
Result<const T*> Tensor::HostData() const {
  FL_RETURN_IF_ERROR(CheckHostView(kDTypeOf<T>));
  return static_cast<const T*>(raw_data());
}

template <typename T>
Result<std::vector<T>> Tensor::ToVector() const {
  FL_ASSIGN_OR_RETURN(const T* data, HostData<T>());
  return std::vector<T>(data, data + numel_);
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_TENSOR_TENSOR_H_
