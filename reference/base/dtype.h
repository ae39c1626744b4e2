// Provides DType: the element types of tensors and .npy arrays (one enum for
// both, so data read from disk keeps its type all the way to the device).
#ifndef FAULTLINE_REFERENCE_BASE_DTYPE_H_
#define FAULTLINE_REFERENCE_BASE_DTYPE_H_

#include <cstddef>
#include <cstdint>

namespace faultline {

enum class DType { kBool, kUInt8, kInt32, kInt64, kFloat32 };

// Returns the element size in bytes.
size_t DTypeSize(DType dtype);
// Returns "bool", "uint8", "int32", "int64" or "float32".
const char* DTypeName(DType dtype);

template <typename T>
struct DTypeOfT;
template <>
struct DTypeOfT<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOfT<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOfT<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOfT<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOfT<float> {
  static constexpr DType value = DType::kFloat32;
};
// The DType of C++ type T.
template <typename T>
inline constexpr DType kDTypeOf = DTypeOfT<T>::value;

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_DTYPE_H_
