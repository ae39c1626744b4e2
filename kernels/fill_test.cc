// Checks Fill on the runtime under test and its refusal on the cpu runtime.
#include "kernels/fill.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace kernels {
namespace {

// On simcuda the host twin runs; in the gpu twin (fill_cuda_test) the kernel.
TEST(FillTest, FillsDeviceMemoryOnTheRuntimeUnderTest) {
  auto runtime = DeviceRuntimeUnderTest();
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  DeviceRuntime& rt = **runtime;
  const uint64_t n = 100000;  // more than one grid of 256-thread blocks covers at once
  auto dev = rt.Malloc(n * sizeof(float));
  ASSERT_TRUE(dev.ok()) << dev.status();
  ASSERT_TRUE(Fill(rt, static_cast<float*>(*dev), n, 2.5f).ok());
  ASSERT_TRUE(rt.DeviceSynchronize().ok());
  std::vector<float> host(n, 0.0f);
  ASSERT_TRUE(rt.Memcpy(host.data(), *dev, n * sizeof(float), MemcpyKind::kDeviceToHost).ok());
  for (float v : host) ASSERT_EQ(v, 2.5f);
  EXPECT_TRUE(rt.Free(*dev).ok());
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
