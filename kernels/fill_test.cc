// Checks Fill and FillWords on the runtime under test and the refusal on the
// cpu runtime.
#include "kernels/fill.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace kernels {
namespace {

// On simcuda the host twin runs; in the gpu twin (fill_cuda_test) the kernel.
TEST(FillTest, FillsDeviceMemoryOnTheRuntimeUnderTest) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  const uint64_t n = 100000;  // 391 blocks of 256 threads
  auto dev = rt.Malloc(n * sizeof(float));
  FL_ASSERT_OK(dev);
  FL_ASSERT_OK(Fill(rt, static_cast<float*>(*dev), n, 2.5f));
  FL_ASSERT_OK(rt.DeviceSynchronize());
  std::vector<float> host(n, 0.0f);
  FL_ASSERT_OK(rt.Memcpy(host.data(), *dev, n * sizeof(float), MemcpyKind::kDeviceToHost));
  for (float v : host) ASSERT_EQ(v, 2.5f);
  FL_EXPECT_OK(rt.Free(*dev));
}

// Every word, over hundreds of blocks, and nothing around the range: the
// fill starts one word in and stops one word short.
TEST(FillTest, FillsInt64WordsOnTheRuntimeUnderTest) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  const uint64_t n = 100002;
  std::vector<int64_t> host(n, 7);
  auto dev = rt.Malloc(n * sizeof(int64_t));
  FL_ASSERT_OK(dev);
  int64_t* words = static_cast<int64_t*>(*dev);
  FL_ASSERT_OK(rt.Memcpy(words, host.data(), n * sizeof(int64_t), MemcpyKind::kHostToDevice));
  FL_ASSERT_OK(FillWords(rt, words + 1, n - 2, -1));
  FL_ASSERT_OK(FillWords(rt, words, 0, 5));  // nothing
  FL_ASSERT_OK(rt.DeviceSynchronize());
  FL_ASSERT_OK(rt.Memcpy(host.data(), words, n * sizeof(int64_t), MemcpyKind::kDeviceToHost));
  EXPECT_EQ(host.front(), 7);
  EXPECT_EQ(host.back(), 7);
  for (uint64_t i = 1; i + 1 < n; ++i) ASSERT_EQ(host[i], -1) << "word " << i;
  FL_EXPECT_OK(rt.Free(*dev));
}

// Past the 65535 blocks LaunchFor launches (16.8M words at 256 threads),
// each thread loops: on a GPU only a fill this long runs the grid-stride
// loop more than once.
TEST(FillTest, FillsWordsPastOneGridOnTheRuntimeUnderTest) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  const uint64_t n = uint64_t{65535} * 256 * 2 + 1001;
  std::vector<int64_t> host(n + 2, 7);
  auto dev = rt.Malloc((n + 2) * sizeof(int64_t));
  FL_ASSERT_OK(dev);
  int64_t* words = static_cast<int64_t*>(*dev);
  FL_ASSERT_OK(rt.Memcpy(words, host.data(), host.size() * sizeof(int64_t), MemcpyKind::kHostToDevice));
  FL_ASSERT_OK(FillWords(rt, words + 1, n, -3));
  FL_ASSERT_OK(rt.DeviceSynchronize());
  FL_ASSERT_OK(rt.Memcpy(host.data(), words, host.size() * sizeof(int64_t), MemcpyKind::kDeviceToHost));
  EXPECT_EQ(host.front(), 7);
  EXPECT_EQ(host.back(), 7);
  for (uint64_t i = 1; i <= n; ++i) ASSERT_EQ(host[i], -3) << "word " << i;
  FL_EXPECT_OK(rt.Free(*dev));
}

// A fill of nothing touches nothing, even aimed at null (simcuda took it for
// an illegal address and poisoned the context; the GPU kernel does nothing).
TEST(FillTest, FillingNothingTouchesNothing) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  FL_ASSERT_OK(Fill(rt, nullptr, 0, 1.0f));
  FL_ASSERT_OK(rt.DeviceSynchronize());
  auto after = rt.Malloc(64);
  FL_EXPECT_OK(after);
  if (after.ok()) {
    FL_EXPECT_OK(rt.Free(*after));
  }
}

TEST(FillTest, CpuRuntimeRefusesToLaunch) {
  float x = 0;
  Status s = Fill(GetRuntime(RuntimeKind::kCpu), &x, 1, 1.0f);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), testing::HasSubstr("FillKernel")) << s;
  EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace kernels
}  // namespace faultline
