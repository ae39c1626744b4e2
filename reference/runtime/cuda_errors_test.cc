// Checks simcuda's error table against libcudart itself: cudaGetErrorName
// and cudaGetErrorString need no driver and no GPU.
#include "reference/runtime/cuda_errors.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(CudaErrorsTest, NamesAndStringsMatchLibcudart) {
  int count = 0;
  const cudaError_t* codes = SimCudaErrors(&count);
  ASSERT_GE(count, 10);
  for (int i = 0; i < count; ++i) {
    SCOPED_TRACE(cudaGetErrorName(codes[i]));
    EXPECT_STREQ(SimCudaErrorName(codes[i]), cudaGetErrorName(codes[i]));
    EXPECT_STREQ(SimCudaErrorString(codes[i]), cudaGetErrorString(codes[i]));
  }
}

TEST(CudaErrorsTest, DocumentedCodesHaveTheToolkitValues) {
  EXPECT_EQ(cudaErrorInitializationError, 3);
  EXPECT_EQ(cudaErrorInsufficientDriver, 35);
  EXPECT_EQ(cudaErrorNoDevice, 100);
  EXPECT_EQ(cudaErrorIllegalAddress, 700);
  EXPECT_EQ(cudaErrorHostMemoryAlreadyRegistered, 712);
  EXPECT_EQ(cudaErrorHostMemoryNotRegistered, 713);
}

TEST(CudaErrorsTest, CallErrorKeepsEveryField) {
  Status s = CudaCallError(713, "cudaErrorHostMemoryNotRegistered",
                           "pointer does not correspond to a registered memory region", "cudaHostUnregister",
                           SourceLocation{"a.cc", 9}, "more");
  ASSERT_TRUE(s.cuda_error().has_value());
  EXPECT_EQ(s.cuda_error()->code, 713);
  EXPECT_EQ(s.cuda_error()->api, "cudaHostUnregister");
  EXPECT_EQ(s.cuda_error()->file, "a.cc");
  EXPECT_EQ(s.cuda_error()->line, 9);
  EXPECT_EQ(s.message(), "cudaHostUnregister failed: pointer does not correspond to a registered memory region; more");
}

}  // namespace
}  // namespace faultline
