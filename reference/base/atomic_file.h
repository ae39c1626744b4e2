// Provides WriteFileAtomically: a file that appears whole or not at all.
#ifndef FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_
#define FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_

#include <initializer_list>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace faultline {

// Writes `parts`, one after the other, to `path` (mode 0644) through a
// temporary file next to it that is fsynced and renamed into place: either
// the complete file appears at `path` or the previous state is left
// unchanged, and no temporary file stays behind. Failures are
// InvalidArgument errors naming the path, the step and errno.
Status WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_
