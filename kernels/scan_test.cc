// Checks ExclusiveSum on the runtime under test against a host scan: sizes
// around block boundaries, in place, and bad input.
#include "kernels/scan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace kernels {
namespace {

class ExclusiveSumTest : public testing::Test {
 protected:
  void SetUp() override {
    auto runtime = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(runtime);
    rt_ = *runtime;
  }
  // Copies `values` to the device, scans (in place when asked) and returns the result.
  std::vector<int64_t> Scan(const std::vector<int64_t>& values, bool in_place) {
    const size_t bytes = values.size() * sizeof(int64_t);
    void* in = *rt_->Malloc(bytes);
    void* out = in_place ? in : *rt_->Malloc(bytes);
    FL_EXPECT_OK(rt_->Memcpy(in, values.data(), bytes, MemcpyKind::kHostToDevice));
    Status s = ExclusiveSum(*rt_, static_cast<const int64_t*>(in), static_cast<int64_t*>(out),
                            static_cast<int64_t>(values.size()));
    FL_EXPECT_OK(s);
    std::vector<int64_t> result(values.size());
    FL_EXPECT_OK(rt_->Memcpy(result.data(), out, bytes, MemcpyKind::kDeviceToHost));
    FL_EXPECT_OK(rt_->Free(in));
    if (!in_place) {
      FL_EXPECT_OK(rt_->Free(out));
    }
    return result;
  }
  DeviceRuntime* rt_ = nullptr;
};

std::vector<int64_t> HostScan(const std::vector<int64_t>& values) {
  std::vector<int64_t> out(values.size());
  int64_t running = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    out[i] = running;
    running += values[i];
  }
  return out;
}

TEST_F(ExclusiveSumTest, MatchesTheHostScanAtEverySize) {
  for (int64_t n : {1, 2, 255, 256, 257, 1000, 65537}) {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = (i * 7919) % 13 - 3;  // negative values too
    EXPECT_EQ(Scan(values, /*in_place=*/false), HostScan(values)) << "n = " << n;
    EXPECT_EQ(Scan(values, /*in_place=*/true), HostScan(values)) << "in place, n = " << n;
  }
}

// An earlier call's error, already reported, is not the scan's: CUB checks
// its launches with cudaPeekAtLastError, which still held it. Every backend
// leaves the last error clear.
TEST_F(ExclusiveSumTest, AnEarlierCallsErrorDoesNotFailTheScan) {
  ASSERT_FALSE(rt_->Malloc(size_t{1} << 40).ok());  // leaves cudaErrorMemoryAllocation as the last error
  EXPECT_EQ(Scan({3, 4, 5}, /*in_place=*/false), (std::vector<int64_t>{0, 3, 7}));
  FL_EXPECT_OK(rt_->GetLastError());
}

// The same for the scratch query: on an H100, CUB's query failed with
// cudaErrorInvalidDevice (101) while a failed cudaMalloc's error was still
// the last error, and the device sampler's multi-hop call failed with it.
TEST_F(ExclusiveSumTest, AnEarlierCallsErrorDoesNotFailTheScratchQuery) {
  ASSERT_FALSE(rt_->Malloc(size_t{1} << 40).ok());  // leaves cudaErrorMemoryAllocation as the last error
  Result<size_t> bytes = ExclusiveSumScratchBytes(*rt_, 1025);
  FL_ASSERT_OK(bytes);
  EXPECT_GT(*bytes, 0u);
  FL_EXPECT_OK(rt_->GetLastError());
}

// A caller that keeps the scratch (the sampling workspace) lends it; the
// scan then runs in it, with the same result.
TEST_F(ExclusiveSumTest, RunsInLentScratchWithTheSameResult) {
  for (int64_t n : {1, 257, 65537}) {
    std::vector<int64_t> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = (i * 31) % 7 - 2;
    Result<size_t> scratch_bytes = ExclusiveSumScratchBytes(*rt_, n);
    FL_ASSERT_OK(scratch_bytes);
    ASSERT_GT(*scratch_bytes, 0u);
    const size_t bytes = values.size() * sizeof(int64_t);
    void* data = *rt_->Malloc(bytes);
    void* scratch = *rt_->Malloc(*scratch_bytes);
    FL_ASSERT_OK(rt_->Memcpy(data, values.data(), bytes, MemcpyKind::kHostToDevice));
    Status s = ExclusiveSum(*rt_, static_cast<int64_t*>(data), static_cast<int64_t*>(data), n, nullptr,
                            ScanScratch{scratch, *scratch_bytes});
    FL_EXPECT_OK(s);
    std::vector<int64_t> result(values.size());
    FL_ASSERT_OK(rt_->Memcpy(result.data(), data, bytes, MemcpyKind::kDeviceToHost));
    EXPECT_EQ(result, HostScan(values)) << "n = " << n;
    FL_EXPECT_OK(rt_->Free(scratch));
    FL_EXPECT_OK(rt_->Free(data));
  }
}

TEST_F(ExclusiveSumTest, RefusesLentScratchSmallerThanItNeeds) {
  const int64_t n = 1000;
  Result<size_t> needed = ExclusiveSumScratchBytes(*rt_, n);
  FL_ASSERT_OK(needed);
  void* data = *rt_->Malloc(n * sizeof(int64_t));
  void* scratch = *rt_->Malloc(*needed);
  Status s = ExclusiveSum(*rt_, static_cast<int64_t*>(data), static_cast<int64_t*>(data), n, nullptr,
                          ScanScratch{scratch, *needed - 1});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "ExclusiveSum: scratch of " + std::to_string(*needed - 1) +
                             " bytes for 1000 words; expected at least " + std::to_string(*needed) +
                             " (ExclusiveSumScratchBytes)");
  FL_EXPECT_OK(rt_->Free(scratch));
  FL_EXPECT_OK(rt_->Free(data));
}

TEST_F(ExclusiveSumTest, RejectsANegativeLengthAndAcceptsAnEmptyOne) {
  Status negative = ExclusiveSum(*rt_, nullptr, nullptr, -1);
  EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.message(), "ExclusiveSum: n is -1; expected n >= 0");
  FL_EXPECT_OK(ExclusiveSum(*rt_, nullptr, nullptr, 0));
  Result<size_t> negative_scratch = ExclusiveSumScratchBytes(*rt_, -1);
  EXPECT_EQ(negative_scratch.status().message(), "ExclusiveSumScratchBytes: n is -1; expected n >= 0");
}

}  // namespace
}  // namespace kernels
}  // namespace faultline
