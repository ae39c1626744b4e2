// Implements Fill and FillWords over LaunchKernel.
#include "kernels/fill.h"

#include "kernels/fill.cuh"
#include "kernels/launch.h"

namespace faultline {
namespace kernels {

Status Fill(DeviceRuntime& runtime, float* out, uint64_t n, float value, StreamHandle stream, SourceLocation loc) {
  if (n == 0) return OkStatus();  // a kernel over nothing touches nothing (simcuda faulted on a null `out`)
  return LaunchKernel(runtime, "FillKernel", LaunchFor(n, 256, stream), FillKernel{out, n, value},
                      {BufferUse{out, n * sizeof(float)}}, &LaunchFillOnCuda, loc);
}

Status FillWords(DeviceRuntime& runtime, int64_t* out, uint64_t n, int64_t value, StreamHandle stream,
                 SourceLocation loc) {
  if (n == 0) return OkStatus();
  return LaunchKernel(runtime, "FillWordsKernel", LaunchFor(n, 256, stream), FillWordsKernel{out, n, value},
                      {BufferUse{out, n * sizeof(int64_t)}}, &LaunchFillWordsOnCuda, loc);
}

}  // namespace kernels
}  // namespace faultline
