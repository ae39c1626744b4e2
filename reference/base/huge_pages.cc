// Implements BackWithHugePages (huge_pages.h) with madvise(2).
#include "reference/base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // linux/mman.h since 6.1; glibc 2.36 does not name it yet
#endif

namespace faultline {

size_t BackWithHugePages(const void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (start + bytes) & ~(kHugePage - 1);
  if (data == nullptr || end <= begin) return 0;
  void* region = reinterpret_cast<void*>(begin);
  // MADV_HUGEPAGE keeps the region eligible (THP "madvise" mode, the
  // default); MADV_COLLAPSE converts the pages already there.
  if (madvise(region, end - begin, MADV_HUGEPAGE) != 0) return 0;
  return madvise(region, end - begin, MADV_COLLAPSE) == 0 ? end - begin : 0;
}

}  // namespace faultline
