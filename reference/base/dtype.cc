// Implements the DType table.
#include "reference/base/dtype.h"

namespace faultline {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8: return 1;
    case DType::kInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "bool";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat32: return "float32";
  }
  return "unknown";
}

}  // namespace faultline
