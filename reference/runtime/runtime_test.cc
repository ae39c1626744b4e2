// Checks the backend-independent contract: argument validation (which never
// touches CUDA state), runtime selection, and the cpu backend.
#include "reference/runtime/runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

class BadArgumentsTest : public testing::TestWithParam<RuntimeKind> {
 protected:
  DeviceRuntime& rt() { return GetRuntime(GetParam()); }
};

TEST_P(BadArgumentsTest, ZeroAndNegativeSizesAreRejectedByName) {
  auto zero = rt().Malloc(0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), testing::HasSubstr("Malloc: argument 'bytes' is 0")) << zero.status();
  auto negative = rt().Malloc(static_cast<size_t>(-8));
  ASSERT_FALSE(negative.ok());
  EXPECT_THAT(negative.status().message(), testing::HasSubstr("negative size"));
  std::vector<char> host(16);
  EXPECT_EQ(rt().HostRegister(host.data(), 0).code(), StatusCode::kInvalidArgument);
}

TEST_P(BadArgumentsTest, NullPointersAreRejectedByName) {
  char byte = 0;
  Status s = rt().Memcpy(nullptr, &byte, 1, MemcpyKind::kHostToHost);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Memcpy: argument 'dst' is null; expected a valid pointer");
  EXPECT_EQ(rt().Memcpy(&byte, nullptr, 1, MemcpyKind::kHostToHost).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rt().HostRegister(nullptr, 4).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rt().HostUnregister(nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rt().GetPointerAttributes(nullptr).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rt().StreamDestroy(nullptr).code(), StatusCode::kInvalidArgument);
  // A zero-byte copy is a no-op, as in CUDA.
  FL_EXPECT_OK(rt().Memcpy(nullptr, nullptr, 0, MemcpyKind::kHostToDevice));
}

INSTANTIATE_TEST_SUITE_P(Backends, BadArgumentsTest, testing::Values(RuntimeKind::kCpu, RuntimeKind::kSimCuda),
                         [](const auto& info) { return std::string(RuntimeKindName(info.param)); });

TEST(RuntimeKindTest, ParsesNamesAndRejectsUnknownOnes) {
  EXPECT_EQ(*ParseRuntimeKind("cpu"), RuntimeKind::kCpu);
  EXPECT_EQ(*ParseRuntimeKind("simcuda"), RuntimeKind::kSimCuda);
  EXPECT_EQ(*ParseRuntimeKind("cuda"), RuntimeKind::kCuda);
  auto bad = ParseRuntimeKind("gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--runtime is 'gpu'; expected one of cpu, simcuda, cuda, auto");
}

TEST(RuntimeKindTest, AutoPicksCudaOnlyWithAUsableDevice) {
  auto kind = ParseRuntimeKind("auto");
  FL_ASSERT_OK(kind);
  const bool has_gpu = GetRuntime(RuntimeKind::kCuda).DeviceCount() > 0;
  EXPECT_EQ(*kind, has_gpu ? RuntimeKind::kCuda : RuntimeKind::kSimCuda);
}

TEST(RuntimeKindTest, EnvironmentVariableIsNamedInErrors) {
  setenv("FAULTLINE_RUNTIME", "tpu", 1);
  auto bad = RuntimeKindFromEnv();
  unsetenv("FAULTLINE_RUNTIME");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "FAULTLINE_RUNTIME is 'tpu'; expected one of cpu, simcuda, cuda, auto");
}

TEST(CpuRuntimeTest, HasNoDeviceAndSaysWhatToUse) {
  DeviceRuntime& cpu = GetRuntime(RuntimeKind::kCpu);
  EXPECT_EQ(cpu.DeviceCount(), 0);
  auto p = cpu.Malloc(16);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(p.status().message(), testing::HasSubstr("use --runtime=simcuda or --runtime=cuda"));
  int value = 5;
  auto attrs = cpu.GetPointerAttributes(&value);
  FL_ASSERT_OK(attrs);
  EXPECT_EQ(attrs->type, MemoryType::kUnregistered);
  int copy = 0;
  FL_EXPECT_OK(cpu.Memcpy(&copy, &value, sizeof(int), MemcpyKind::kHostToHost));
  EXPECT_EQ(copy, 5);
}

TEST(CudaRuntimeTest, DeviceCountIsTheRuntimesCountOrZeroWhenItFails) {
  // With a driver and a GPU, cudaGetDeviceCount's count (at least 1: no
  // device is an error); without, its own error, and DeviceCount() is 0.
  DeviceRuntime& cuda = GetRuntime(RuntimeKind::kCuda);
  Result<int> reported = cuda.GetDeviceCount();
  const int count = cuda.DeviceCount();
  if (reported.ok()) {
    EXPECT_GE(*reported, 1);
    EXPECT_EQ(count, *reported);
  } else {
    EXPECT_EQ(count, 0) << reported.status();
    ASSERT_TRUE(reported.status().cuda_error().has_value()) << reported.status();
    EXPECT_EQ(reported.status().cuda_error()->api, "cudaGetDeviceCount");
    EXPECT_NE(reported.status().cuda_error()->code, 0);
  }
}

}  // namespace
}  // namespace faultline
