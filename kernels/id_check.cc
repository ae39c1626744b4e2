// Implements the id check over CheckIdsKernel.
#include "kernels/id_check.h"

#include "kernels/fill.h"
#include "kernels/id_check_kernels.cuh"
#include "kernels/launch.h"

namespace faultline {
namespace kernels {

Status QueueIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit, IdCheckWords words,
                    StreamHandle stream, SourceLocation loc) {
  if (n <= 0) return OkStatus();
  // Set in `stream`, ahead of the kernel: a synchronous copy from pageable
  // memory may return before its DMA lands, and a non-blocking stream is
  // not ordered after it.
  FL_RETURN_IF_ERROR(FillWords(runtime, reinterpret_cast<int64_t*>(words.device), 1, n, stream, loc));
  return LaunchKernel(
      runtime, "CheckIdsKernel", LaunchFor(static_cast<uint64_t>(n), 256, stream),
      CheckIdsKernel{ids, n, limit, words.device},
      {BufferUse{ids, static_cast<size_t>(n) * sizeof(int64_t)}, BufferUse{words.device, sizeof(unsigned long long)}},
      &LaunchCheckIdsOnCuda, loc);
}

Status QueueIdCheckCopy(DeviceRuntime& runtime, int64_t n, IdCheckWords words, StreamHandle stream,
                        SourceLocation loc) {
  if (n <= 0) return OkStatus();
  return runtime.MemcpyAsync(words.host, words.device, sizeof(unsigned long long), MemcpyKind::kDeviceToHost, stream,
                             loc);
}

Result<std::optional<BadId>> LandedIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, IdCheckWords words,
                                           SourceLocation loc) {
  if (n <= 0) return std::optional<BadId>();
  const unsigned long long bad = *words.host;
  if (bad >= static_cast<unsigned long long>(n)) return std::optional<BadId>();
  BadId found{static_cast<int64_t>(bad), 0};
  FL_RETURN_IF_ERROR(runtime.Memcpy(&found.value, ids + bad, sizeof(int64_t), MemcpyKind::kDeviceToHost, loc));
  return std::optional<BadId>(found);
}

Result<std::optional<BadId>> ReadIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, IdCheckWords words,
                                         StreamHandle stream, SourceLocation loc) {
  if (n <= 0) return std::optional<BadId>();
  // Read in `stream`, after the kernel, then one wait: a single host round
  // trip (DeviceRuntime::host_waits).
  FL_RETURN_IF_ERROR(QueueIdCheckCopy(runtime, n, words, stream, loc));
  FL_RETURN_IF_ERROR(runtime.StreamSynchronize(stream, loc));
  return LandedIdCheck(runtime, ids, n, words, loc);
}

Result<std::optional<BadId>> FirstIdOutside(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit,
                                            StreamHandle stream, SourceLocation loc) {
  if (n <= 0) return std::optional<BadId>();
  FL_ASSIGN_OR_RETURN(void* scratch, runtime.Malloc(sizeof(unsigned long long), loc));
  unsigned long long verdict = 0;
  const IdCheckWords words{static_cast<unsigned long long*>(scratch), &verdict};
  Result<std::optional<BadId>> result = [&]() -> Result<std::optional<BadId>> {
    FL_RETURN_IF_ERROR(QueueIdCheck(runtime, ids, n, limit, words, stream, loc));
    return ReadIdCheck(runtime, ids, n, words, stream, loc);
  }();
  Status freed = runtime.Free(scratch, loc);
  if (result.ok() && !freed.ok()) return freed;
  return result;
}

}  // namespace kernels
}  // namespace faultline
