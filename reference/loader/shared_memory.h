// Provides POSIX shared-memory segments for passing bytes between processes:
// a producer writes a named segment, the consumer reads and unlinks it.
#ifndef FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_
#define FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_

#include <functional>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace faultline {

// Creates segment `name` ("/..."), writes `bytes` into it and closes it.
// On failure nothing is left behind. `halfway`, when set, runs once half of
// the bytes are in the segment (a fault-injection point for tests).
Status WriteSharedMemory(const std::string& name, std::string_view bytes,
                         const std::function<void()>& halfway = nullptr);
// Reads the whole segment `name` and unlinks it.
Result<std::string> TakeSharedMemory(const std::string& name);
// Unlinks segment `name` and calls `read` on its bytes where they lie (no
// copy); the view is valid only during the call. Returns `read`'s status.
Status ReadSharedMemory(const std::string& name, const std::function<Status(std::string_view)>& read);
// Unlinks `name` if it exists (cleanup on error paths).
void UnlinkSharedMemory(const std::string& name);
// Returns whether a segment called `name` exists (for leak tests).
bool SharedMemoryExists(const std::string& name);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_
