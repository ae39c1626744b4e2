// Provides reading and writing of NumPy .npy files (format versions 1.0 and
// 2.0, little-endian bool / uint8 / int32 / int64 / float32, C order) and
// typed helpers for the 1-D arrays a graph is stored in. Every malformed file
// becomes an error Status that names the file, the problem and what was
// expected; writes are atomic (a temporary file in the same folder, renamed).
#ifndef FAULTLINE_REFERENCE_GRAPH_NPY_H_
#define FAULTLINE_REFERENCE_GRAPH_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/dtype.h"
#include "reference/base/status.h"

namespace faultline {
namespace npy {

// Element types faultline reads and writes: the project's one DType.
using ::faultline::DType;

// Returns the NumPy descr string of a dtype: "|b1", "|u1", "<i4", "<i8", "<f4".
const char* DTypeDescr(DType dtype);

// Holds one array: its dtype, shape and raw little-endian C-order bytes.
struct NpyArray {
  DType dtype = DType::kInt64;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  // Returns the product of the shape (1 for a 0-d array).
  int64_t num_elements() const;
};

// Reads a whole .npy file. Fails with DataLoss for a truncated or corrupt
// file and InvalidArgument for a valid file faultline does not support
// (fortran order, big-endian or unknown dtype).
Result<NpyArray> ReadNpy(const std::string& path);

// Writes an array atomically: either the complete file appears at `path` or
// the previous state is left unchanged.
Status WriteNpy(const std::string& path, const NpyArray& array);

// Reads a 1-D integer array whose dtype is one of `accepted` (any of kUInt8,
// kInt32, kInt64), widened to int64. Stores the file's dtype in
// `stored_dtype` when it is not null.
Result<std::vector<int64_t>> ReadNpyInt64(const std::string& path, const std::vector<DType>& accepted,
                                          DType* stored_dtype = nullptr);

// Reads a 1-D float32 array.
Result<std::vector<float>> ReadNpyFloat32(const std::string& path);

// Writes a 1-D integer array as `dtype` (kUInt8, kInt32 or kInt64); fails
// without writing when a value does not fit.
Status WriteNpyInt(const std::string& path, const std::vector<int64_t>& values, DType dtype);

// Writes a 1-D float32 array.
Status WriteNpyFloat32(const std::string& path, const std::vector<float>& values);

}  // namespace npy
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_GRAPH_NPY_H_
