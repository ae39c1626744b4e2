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

// Device memory a caller lends ExclusiveSum for its scratch, so that a
// caller that keeps it allocates nothing per scan. Without it, cuda takes
// the scratch from the stream-ordered pool (cudaMallocAsync/cudaFreeAsync),
// whose default release threshold of 0 may hand the memory back to the OS
// at every synchronization.
struct ScanScratch {
  void* data = nullptr;
  size_t bytes = 0;
};

// Returns the scratch bytes ExclusiveSum needs for n words on the runtime's
// current device: CUB's own answer on cuda; one word on simcuda, whose
// sequential twin needs none but checks a lent buffer as a kernel's.
// Reads (clears) the thread's last error first, as ExclusiveSum does.
Result<size_t> ExclusiveSumScratchBytes(DeviceRuntime& runtime, int64_t n,
                                        SourceLocation loc = SourceLocation::Current());

// Writes out[i] = in[0] + ... + in[i-1] (out[0] = 0) for i in [0, n), both
// arrays in device (or pinned) memory of the runtime's current device, in
// `stream`, with `scratch` when lent (at least ExclusiveSumScratchBytes,
// else InvalidArgument). `in` and `out` may be the same array. Reads (and so
// clears) the calling thread's last error first: CUB would take an earlier
// call's error for its own.
Status ExclusiveSum(DeviceRuntime& runtime, const int64_t* in, int64_t* out, int64_t n, StreamHandle stream = nullptr,
                    ScanScratch scratch = {}, SourceLocation loc = SourceLocation::Current());

// The nvcc-compiled CUB scan (scan_cuda.cu), in `scratch` when it is not
// null, else (a caller without a workspace to lend from) in scratch from
// the stream-ordered pool; returns a cudaError_t.
int ExclusiveSumOnCuda(const int64_t* in, int64_t* out, int64_t n, void* stream, void* scratch, size_t scratch_bytes);
// CUB's scratch bytes for n words (no launch); returns a cudaError_t.
int ExclusiveSumScratchBytesOnCuda(int64_t n, size_t* bytes);

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_SCAN_H_
