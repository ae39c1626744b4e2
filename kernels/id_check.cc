// Implements FirstIdOutside over CheckIdsKernel.
#include "kernels/id_check.h"

#include "kernels/fill.h"
#include "kernels/id_check_kernels.cuh"
#include "kernels/launch.h"

namespace faultline {
namespace kernels {

Result<std::optional<BadId>> FirstIdOutside(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit,
                                            StreamHandle stream, SourceLocation loc) {
  if (n <= 0) return std::optional<BadId>();
  // One device word holds the smallest bad position; n means "none".
  FL_ASSIGN_OR_RETURN(void* scratch, runtime.Malloc(sizeof(unsigned long long), loc));
  auto* first_bad = static_cast<unsigned long long*>(scratch);
  auto run = [&]() -> Result<std::optional<BadId>> {
    const unsigned long long none = static_cast<unsigned long long>(n);
    // Set in `stream`, ahead of the kernel: a synchronous copy from pageable
    // memory may return before its DMA lands, and a non-blocking stream is
    // not ordered after it.
    FL_RETURN_IF_ERROR(FillWords(runtime, reinterpret_cast<int64_t*>(first_bad), 1, n, stream, loc));
    FL_RETURN_IF_ERROR(LaunchKernel(
        runtime, "CheckIdsKernel", LaunchFor(static_cast<uint64_t>(n), 256, stream),
        CheckIdsKernel{ids, n, limit, first_bad},
        {BufferUse{ids, static_cast<size_t>(n) * sizeof(int64_t)}, BufferUse{first_bad, sizeof(unsigned long long)}},
        &LaunchCheckIdsOnCuda, loc));
    // Read in `stream`, after the kernel, then one wait: a single host
    // round trip (DeviceRuntime::host_waits).
    unsigned long long bad = none;
    FL_RETURN_IF_ERROR(runtime.MemcpyAsync(&bad, first_bad, sizeof(bad), MemcpyKind::kDeviceToHost, stream, loc));
    FL_RETURN_IF_ERROR(runtime.StreamSynchronize(stream, loc));
    if (bad >= none) return std::optional<BadId>();
    BadId found{static_cast<int64_t>(bad), 0};
    FL_RETURN_IF_ERROR(runtime.Memcpy(&found.value, ids + bad, sizeof(int64_t), MemcpyKind::kDeviceToHost, loc));
    return std::optional<BadId>(found);
  };
  Result<std::optional<BadId>> result = run();
  Status freed = runtime.Free(scratch, loc);
  if (result.ok() && !freed.ok()) return freed;
  return result;
}

}  // namespace kernels
}  // namespace faultline
