// Provides BackWithHugePages: asks the kernel to hold a large, randomly read
// array on 2 MiB pages. Sampling reads a graph's indices (hundreds of MB) at
// random; on 4 KiB pages nearly every read also misses the TLB and walks the
// page table, on 2 MiB pages the whole array fits the TLB.
#ifndef FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_
#define FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_

#include <cstddef>

namespace faultline {

// Marks the 2 MiB-aligned part of [data, data + bytes) MADV_HUGEPAGE and
// collapses its pages into huge ones now (MADV_COLLAPSE, Linux >= 6.1).
// Best effort: the contents never change, and a kernel that cannot or will
// not (older kernel, THP "never", no free huge page) leaves 4 KiB pages.
// Returns how many bytes were collapsed.
size_t BackWithHugePages(const void* data, size_t bytes);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_
