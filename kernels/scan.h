// Provides ExclusiveSum: the prefix sum of a device array as a device
// operation (CUB's DeviceScan on cuda, a host twin on simcuda), so that
// multi-step kernels (sampling offsets, compaction ranks) need no round trip
// through the host.
#ifndef FAULTLINE_KERNELS_SCAN_H_
#define FAULTLINE_KERNELS_SCAN_H_

#include <cstdint>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace kernels {

// Writes out[i] = in[0] + ... + in[i-1] (out[0] = 0) for i in [0, n), both
// arrays in device (or pinned) memory of the runtime's current device, in
// `stream`. `in` and `out` may be the same array. Reads (and so clears) the
// calling thread's last error first: CUB would take an earlier call's error
// for its own.
Status ExclusiveSum(DeviceRuntime& runtime, const int64_t* in, int64_t* out, int64_t n, StreamHandle stream = nullptr,
                    SourceLocation loc = SourceLocation::Current());

// The nvcc-compiled CUB scan (scan_cuda.cu); returns a cudaError_t.
int ExclusiveSumOnCuda(const int64_t* in, int64_t* out, int64_t n, void* stream);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_SCAN_H_
