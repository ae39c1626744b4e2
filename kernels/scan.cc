// Implements ExclusiveSum over DeviceRuntime::Launch: simcuda checks both
// buffers and runs the sequential twin; cuda runs CUB.
#include "kernels/scan.h"

#include <cstddef>

namespace faultline {
namespace kernels {

Result<size_t> ExclusiveSumScratchBytes(DeviceRuntime& runtime, int64_t n, SourceLocation loc) {
  if (n < 0) return InvalidArgumentError("ExclusiveSumScratchBytes: n is " + std::to_string(n) + "; expected n >= 0");
  // CUB's query fails with an earlier call's error still in the last-error
  // slot (seen on an H100: a cudaMalloc's cudaErrorMemoryAllocation, then
  // the query's cudaErrorInvalidDevice, 101). That error was reported to its
  // caller: read it first, on every backend, so they leave the same state.
  (void)runtime.GetLastError(loc);
  if (runtime.kind() != RuntimeKind::kCuda) return sizeof(int64_t);
  size_t bytes = 0;
  const int error = ExclusiveSumScratchBytesOnCuda(n, &bytes);
  if (error != 0) {
    return InternalError("cub::DeviceScan::ExclusiveSum could not size its scratch for " + std::to_string(n) +
                         " words: cudaError_t " + std::to_string(error) + " (at " + loc.file + ":" +
                         std::to_string(loc.line) + ")");
  }
  return bytes;
}

Status ExclusiveSum(DeviceRuntime& runtime, const int64_t* in, int64_t* out, int64_t n, StreamHandle stream,
                    ScanScratch scratch, SourceLocation loc) {
  if (n < 0) return InvalidArgumentError("ExclusiveSum: n is " + std::to_string(n) + "; expected n >= 0");
  if (n == 0) return OkStatus();
  // CUB checks its launches with cudaPeekAtLastError, so an earlier call's
  // error, already reported to its caller, would fail the scan: read it
  // first (on every backend, so that they leave the same last error).
  (void)runtime.GetLastError(loc);
  if (scratch.data != nullptr) {
    FL_ASSIGN_OR_RETURN(const size_t needed, ExclusiveSumScratchBytes(runtime, n, loc));
    if (scratch.bytes < needed) {
      return InvalidArgumentError("ExclusiveSum: scratch of " + std::to_string(scratch.bytes) + " bytes for " +
                                  std::to_string(n) + " words; expected at least " + std::to_string(needed) +
                                  " (ExclusiveSumScratchBytes)");
    }
  }
  const size_t bytes = static_cast<size_t>(n) * sizeof(int64_t);
  const BufferUse buffers[] = {{in, bytes}, {out, bytes}, {scratch.data, scratch.bytes}};
  return runtime.Launch(
      "ExclusiveSum", LaunchConfig{1, 1, stream}, buffers, scratch.data != nullptr ? 3 : 2,
      [&] {
        int64_t running = 0;
        for (int64_t i = 0; i < n; ++i) {
          const int64_t value = in[i];  // read first: in and out may alias
          out[i] = running;
          running += value;
        }
      },
      [&] { return ExclusiveSumOnCuda(in, out, n, stream, scratch.data, scratch.bytes); }, loc);
}

}  // namespace kernels
}  // namespace faultline
