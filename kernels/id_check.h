// Provides the one range check of device id arrays, shared by every device
// op that indexes with caller-supplied ids: FirstIdOutside, or its two
// halves (QueueIdCheck, ReadIdCheck) for an op that queues its own kernel
// between them.
#ifndef FAULTLINE_KERNELS_ID_CHECK_H_
#define FAULTLINE_KERNELS_ID_CHECK_H_

#include <cstdint>
#include <optional>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace kernels {

// An id outside its valid range: where it is and what it is.
struct BadId {
  int64_t position;
  int64_t value;
};

// Where a check leaves its verdict, the smallest bad position (the id count
// when every id is in range): a word of device memory, and the host word it
// is read back into (pinned, the copy is the DMA alone and queued; pageable,
// the driver stages it).
struct IdCheckWords {
  unsigned long long* device = nullptr;
  unsigned long long* host = nullptr;
};

// Queues, in `stream`, the check of the `n` device ids at `ids` (on the
// runtime's current device) against [0, limit): the verdict word set, then
// CheckIdsKernel. A kernel queued after it in `stream` may read the verdict
// (GatherRowsKernel does, to write nothing when an id is bad).
Status QueueIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit, IdCheckWords words,
                    StreamHandle stream = nullptr, SourceLocation loc = SourceLocation::Current());

// Reads the verdict of the QueueIdCheck of the same ids with one host wait
// for `stream` (for all it queued before, too): the first bad id, or
// nullopt when every id is in range. The two halves below, with the wait
// between them.
Result<std::optional<BadId>> ReadIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, IdCheckWords words,
                                         StreamHandle stream = nullptr, SourceLocation loc = SourceLocation::Current());

// Queues, in `stream`, the copy of the verdict of the QueueIdCheck of `n`
// ids into words.host: no wait. It lands when the host next waits for the
// stream (a wait for another read serves).
Status QueueIdCheckCopy(DeviceRuntime& runtime, int64_t n, IdCheckWords words, StreamHandle stream = nullptr,
                        SourceLocation loc = SourceLocation::Current());

// Reads the verdict QueueIdCheckCopy copied, once it has landed: the first
// bad id (its value read with one more wait), or nullopt.
Result<std::optional<BadId>> LandedIdCheck(DeviceRuntime& runtime, const int64_t* ids, int64_t n, IdCheckWords words,
                                           SourceLocation loc = SourceLocation::Current());

// Returns the first of the `n` device ids at `ids` (on the runtime's current
// device) outside [0, limit), or nullopt when every id is in range: both
// halves above, with one wait, in a device word it allocates and frees
// (DeviceRuntime::device_alloc_calls).
Result<std::optional<BadId>> FirstIdOutside(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit,
                                            StreamHandle stream = nullptr,
                                            SourceLocation loc = SourceLocation::Current());

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_ID_CHECK_H_
