// Provides AddressSpaceLimit for tests: lowers the process's address-space
// limit (RLIMIT_AS) for one scope, so that a large allocation fails with
// std::bad_alloc whatever the kernel's overcommit setting. ASan and TSan
// reserve huge ranges and end the process on a failed allocation: tests that
// use it are compiled only without those sanitizers.
#ifndef FAULTLINE_REFERENCE_BASE_ADDRESS_SPACE_LIMIT_H_
#define FAULTLINE_REFERENCE_BASE_ADDRESS_SPACE_LIMIT_H_

#include <sys/resource.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace faultline {

class AddressSpaceLimit {
 public:
  // Allows `extra_bytes` more than the process maps now.
  explicit AddressSpaceLimit(int64_t extra_bytes) {
    EXPECT_EQ(getrlimit(RLIMIT_AS, &saved_), 0);
    std::ifstream status("/proc/self/status");
    std::string line;
    int64_t vm_kib = 0;
    while (std::getline(status, line)) {
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::strtoll(line.c_str() + 7, nullptr, 10);
    }
    EXPECT_GT(vm_kib, 0);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(vm_kib * 1024 + extra_bytes);
    EXPECT_EQ(setrlimit(RLIMIT_AS, &lowered), 0) << std::strerror(errno);
  }
  ~AddressSpaceLimit() { EXPECT_EQ(setrlimit(RLIMIT_AS, &saved_), 0) << std::strerror(errno); }
  AddressSpaceLimit(const AddressSpaceLimit&) = delete;
  AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;

 private:
  rlimit saved_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_ADDRESS_SPACE_LIMIT_H_
