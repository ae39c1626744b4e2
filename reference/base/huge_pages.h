// Provides VectorOnHugePages: a vector whose memory the kernel backs with
// 2 MiB pages. Sampling reads a graph's indices (hundreds of MB) at random;
// on 4 KiB pages nearly every read also misses the TLB and walks the page
// table, on 2 MiB pages the whole array fits the TLB.
#ifndef FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_
#define FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_

#include <cstddef>
#include <vector>

namespace faultline {

// Marks the 2 MiB-aligned part of [data, data + bytes) MADV_HUGEPAGE, so
// pages first touched after the call are huge ones (THP mode "madvise", the
// default, or "always"). Best effort: the contents never change, and a
// kernel that will not (THP "never", no free huge page) uses 4 KiB pages.
// Returns how many bytes were marked.
size_t AdviseHugePages(const void* data, size_t bytes);

// n value-initialised elements in memory marked by AdviseHugePages before
// its first touch (a large allocation is fresh from mmap, untouched).
template <typename T>
std::vector<T> VectorOnHugePages(size_t n) {
  std::vector<T> values;
  values.reserve(n);
  AdviseHugePages(values.data(), n * sizeof(T));
  values.resize(n);
  return values;
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_HUGE_PAGES_H_
