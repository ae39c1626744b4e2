// Provides FirstIdOutside: the one range check of device id arrays, shared
// by every device op that indexes with caller-supplied ids.
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

// Returns the first of the `n` device ids at `ids` (on the runtime's current
// device) outside [0, limit), or nullopt when every id is in range. Runs
// CheckIdsKernel on `stream` and waits for it.
Result<std::optional<BadId>> FirstIdOutside(DeviceRuntime& runtime, const int64_t* ids, int64_t n, int64_t limit,
                                            StreamHandle stream = nullptr,
                                            SourceLocation loc = SourceLocation::Current());

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_ID_CHECK_H_
