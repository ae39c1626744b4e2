// Fuzzes the .npy reader (reference/graph/npy.h). Feeds: the input as the
// bytes of a .npy file. Asserts: ReadNpy never crashes and either fails with
// DataLoss (corrupt, truncated) or InvalidArgument (unsupported), or returns
// an array whose bytes match its shape and dtype; a read array written back
// with WriteNpy reads back identical; the typed readers ReadNpyInt64 and
// ReadNpyFloat32 agree with ReadNpy.
#include <cstring>

#include "properties/fuzz/fuzz_support.h"
#include "reference/graph/npy.h"

namespace faultline {
namespace {

using npy::DType;
using npy::NpyArray;

void CheckTypedReaders(const std::string& path, const NpyArray& array) {
  const bool one_d = array.shape.size() == 1;
  const std::vector<DType> ints = {DType::kUInt8, DType::kInt32, DType::kInt64};
  DType stored = DType::kBool;
  Result<std::vector<int64_t>> as_ints = npy::ReadNpyInt64(path, ints, &stored);
  const bool int_dtype = array.dtype == DType::kUInt8 || array.dtype == DType::kInt32 || array.dtype == DType::kInt64;
  FUZZ_CHECK(as_ints.ok() == (one_d && int_dtype), as_ints.status().ToString());
  if (as_ints.ok()) {
    FUZZ_CHECK(stored == array.dtype, npy::DTypeDescr(stored));
    FUZZ_CHECK(static_cast<int64_t>(as_ints->size()) == array.shape[0], "ReadNpyInt64 size");
    for (size_t i = 0; i < as_ints->size(); ++i) {
      int64_t expected = 0;
      if (array.dtype == DType::kUInt8) {
        expected = array.bytes[i];
      } else if (array.dtype == DType::kInt32) {
        int32_t v;
        std::memcpy(&v, array.bytes.data() + 4 * i, 4);
        expected = v;
      } else {
        std::memcpy(&expected, array.bytes.data() + 8 * i, 8);
      }
      FUZZ_CHECK((*as_ints)[i] == expected, "ReadNpyInt64 value " + std::to_string(i));
    }
  } else {
    FUZZ_CHECK(as_ints.status().code() == StatusCode::kInvalidArgument, as_ints.status().ToString());
  }
  Result<std::vector<float>> as_floats = npy::ReadNpyFloat32(path);
  FUZZ_CHECK(as_floats.ok() == (one_d && array.dtype == DType::kFloat32), as_floats.status().ToString());
  if (as_floats.ok()) {
    FUZZ_CHECK(as_floats->size() * 4 == array.bytes.size(), "ReadNpyFloat32 size");
    FUZZ_CHECK(as_floats->empty() || std::memcmp(as_floats->data(), array.bytes.data(), array.bytes.size()) == 0,
               "ReadNpyFloat32 values");
  }
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  static const std::string path = fuzz::ScratchDir() + "/input.npy";
  static const std::string copy = fuzz::ScratchDir() + "/copy.npy";
  fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));

  Result<npy::NpyArray> array = npy::ReadNpy(path);
  if (!array.ok()) {
    const StatusCode code = array.status().code();
    FUZZ_CHECK(code == StatusCode::kDataLoss || code == StatusCode::kInvalidArgument, array.status().ToString());
    FUZZ_CHECK(array.status().message().find(path) != std::string::npos, "the error does not name the file");
    return 0;
  }
  FUZZ_CHECK(array->num_elements() >= 0, "negative element count");
  FUZZ_CHECK(static_cast<int64_t>(array->bytes.size()) ==
                 array->num_elements() * static_cast<int64_t>(DTypeSize(array->dtype)),
             "bytes do not match the shape");
  CheckTypedReaders(path, *array);

  Status written = npy::WriteNpy(copy, *array);
  FUZZ_CHECK(written.ok(), written.ToString());
  Result<npy::NpyArray> back = npy::ReadNpy(copy);
  FUZZ_CHECK(back.ok(), back.status().ToString());
  FUZZ_CHECK(back->dtype == array->dtype && back->shape == array->shape && back->bytes == array->bytes,
             "WriteNpy then ReadNpy changed the array");
  return 0;
}
