// Implements the tensor registry shared by every Transport.
#include "reference/distributed/transport.h"

namespace faultline {

namespace {

// This trainer's own verdict on a tensor it is asked to create.
Status CheckSpec(const TensorSpec& spec, bool name_taken, int num_partitions, const char* transport) {
  if (spec.name.empty()) return InvalidArgumentError("tensor name is empty; expected a name");
  if (name_taken) return InvalidArgumentError("a distributed tensor named '" + spec.name + "' already exists");
  if (spec.dim < 1) {
    return InvalidArgumentError("tensor '" + spec.name + "': dim is " + std::to_string(spec.dim) + "; expected >= 1");
  }
  int64_t elements = 0, bytes = 0;
  if (__builtin_mul_overflow(spec.book.num_ids(), spec.dim, &elements) ||
      __builtin_mul_overflow(elements, int64_t{sizeof(float)}, &bytes)) {
    return InvalidArgumentError("tensor '" + spec.name + "': " + std::to_string(spec.book.num_ids()) + " ids of dim " +
                                std::to_string(spec.dim) +
                                " are more float32 bytes than an int64 counts; expected fewer ids or a smaller dim");
  }
  if (spec.book.num_partitions() != num_partitions) {
    return InvalidArgumentError("tensor '" + spec.name + "': the partition book has " +
                                std::to_string(spec.book.num_partitions()) + " partitions; the " + transport +
                                " transport has " + std::to_string(num_partitions));
  }
  return OkStatus();
}

}  // namespace

Result<int> Transport::CreateTensor(const TensorSpec& spec, const Status& caller_verdict) {
  Status checked =
      caller_verdict.ok() ? CheckSpec(spec, FindTensor(spec.name).ok(), num_partitions(), name()) : caller_verdict;
  if (checked.ok()) checked = CheckLimits(spec);
  const Status agreed = AgreeOnTensor(spec, checked);
  FL_RETURN_IF_ERROR(checked);  // this trainer's own reason first
  FL_RETURN_IF_ERROR(agreed.WithContext("tensor '" + spec.name + "'"));
  FL_RETURN_IF_ERROR(AllocateTensor(spec).WithContext("tensor '" + spec.name + "'"));
  specs_.push_back(spec);
  return static_cast<int>(specs_.size()) - 1;
}

Result<int> Transport::FindTensor(const std::string& tensor_name) const {
  std::string known;
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == tensor_name) return static_cast<int>(i);
    known += (known.empty() ? "" : ", ") + specs_[i].name;
  }
  return NotFoundError("no distributed tensor named '" + tensor_name +
                       "'; known tensors: " + (known.empty() ? "(none)" : known));
}

}  // namespace faultline
