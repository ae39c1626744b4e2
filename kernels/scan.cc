// Implements ExclusiveSum over DeviceRuntime::Launch: simcuda checks both
// buffers and runs the sequential twin; cuda runs CUB.
#include "kernels/scan.h"

#include <cstddef>

namespace faultline {
namespace kernels {

Status ExclusiveSum(DeviceRuntime& runtime, const int64_t* in, int64_t* out, int64_t n, StreamHandle stream,
                    SourceLocation loc) {
  if (n < 0) return InvalidArgumentError("ExclusiveSum: n is " + std::to_string(n) + "; expected n >= 0");
  if (n == 0) return OkStatus();
  // CUB checks its launches with cudaPeekAtLastError, so an earlier call's
  // error, already reported to its caller, would fail the scan: read it
  // first (on every backend, so that they leave the same last error).
  (void)runtime.GetLastError(loc);
  const size_t bytes = static_cast<size_t>(n) * sizeof(int64_t);
  const BufferUse buffers[] = {{in, bytes}, {out, bytes}};
  return runtime.Launch(
      "ExclusiveSum", LaunchConfig{1, 1, stream}, buffers, 2,
      [&] {
        int64_t running = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t value = in[i];  // read first: in and out may alias
          out[i] = running;
          running += value;
        }
      },
      [&] { return ExclusiveSumOnCuda(in, out, n, stream); }, loc);
}

}  // namespace kernels
}  // namespace faultline
