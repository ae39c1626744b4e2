// Provides the unique-and-compact tests' reach into the calling thread's
// dense-id tables (defined in unique_and_compact.cc). Tests only: the
// library's header does not show these.
#ifndef FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_TESTING_H_
#define FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_TESTING_H_

#include <cstdint>

namespace faultline {

// Sets the calling thread's call counters of the dense-id tables, each
// capped at its form's last (tests: the wrap after 255 calls with 4-byte
// entries and 2^32 - 1 with 8-byte ones, which must forget every earlier
// entry). Setting them backwards makes entries of earlier calls with the
// reused stamps read as present: only for reaching the wrap.
void SetUniqueAndCompactGenerationForTesting(uint32_t generation);

// Tests: the entry size in bytes (4 or 8) of the dense-id table of the
// calling thread's last compactor, or 0 when it used a hash table.
int LastDirectEntryBytesForTesting();

// Tests: the dense-id table takes 8-byte entries for every id while set
// (ids below 2^24 take 4-byte ones by default), so that both forms run on
// small inputs.
void UseWideDirectEntriesOnlyForTesting(bool wide_only);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_UNIQUE_AND_COMPACT_TESTING_H_
