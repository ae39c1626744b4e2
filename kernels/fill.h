// Provides Fill and FillWords: set n floats or int64 words of device memory
// to a value, on simcuda or cuda.
#ifndef FAULTLINE_KERNELS_FILL_H_
#define FAULTLINE_KERNELS_FILL_H_

#include <cstdint>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace kernels {

// Launches a fill of out[0, n) with `value` on `stream`; does not synchronize.
Status Fill(DeviceRuntime& runtime, float* out, uint64_t n, float value, StreamHandle stream = nullptr,
            SourceLocation loc = SourceLocation::Current());

// Launches a fill of the int64 words out[0, n) with `value` on `stream`
// (nothing for n = 0); does not synchronize.
Status FillWords(DeviceRuntime& runtime, int64_t* out, uint64_t n, int64_t value, StreamHandle stream = nullptr,
                 SourceLocation loc = SourceLocation::Current());

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_FILL_H_
