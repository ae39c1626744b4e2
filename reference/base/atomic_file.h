// Provides WriteFileAtomically: a file that appears whole or not at all.
#ifndef FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_
#define FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_

#include <initializer_list>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace faultline {

// Whether the file must survive a crash of the machine (kDurable: fsync
// before the rename) or only appear whole to other processes (kVisible: the
// rename alone does that, without the disk's latency).
enum class FileDurability { kDurable, kVisible };

// Writes `parts`, one after the other, to `path` (mode 0644) through a
// temporary file next to it that is renamed into place: either the complete
// file appears at `path` or the previous state is left unchanged, and no
// temporary file stays behind. Failures name the path, the step and errno:
// InvalidArgument when the temporary file cannot be made or renamed (the
// path is wrong), Unavailable when the disk fails it (full, over quota, EIO).
Status WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts,
                           FileDurability durability = FileDurability::kDurable);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_ATOMIC_FILE_H_
