// Implements AdviseHugePages (huge_pages.h) with madvise(2).
#include "reference/base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace faultline {

size_t AdviseHugePages(const void* data, size_t bytes) {
  constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
  const uintptr_t start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (start + bytes) & ~(kHugePage - 1);
  if (data == nullptr || end <= begin) return 0;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0 ? end - begin : 0;
}

}  // namespace faultline
