// Checks that a Status survives its JSON form, CUDA detail included.
#include "reference/base/status_json.h"

#include <gtest/gtest.h>

namespace faultline {
namespace {

TEST(StatusJsonTest, RoundTripsPlainAndCudaErrors) {
  Status plain = InvalidArgumentError("fanout is -3; expected >= -1");
  Status back = StatusFromJson(StatusToJson(plain));
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), plain.message());
  EXPECT_FALSE(back.cuda_error().has_value());

  Status cuda(CudaErrorInfo{713, "cudaErrorHostMemoryNotRegistered",
                            "pointer does not correspond to a registered "
                            "memory region",
                            "cudaHostUnregister", "a.cc", 12},
              "cudaHostUnregister failed");
  back = StatusFromJson(nlohmann::json::parse(StatusToJson(cuda).dump()));
  EXPECT_EQ(back.code(), StatusCode::kDeviceError);
  ASSERT_TRUE(back.cuda_error().has_value());
  EXPECT_EQ(back.cuda_error()->code, 713);
  EXPECT_EQ(back.cuda_error()->name, "cudaErrorHostMemoryNotRegistered");
  EXPECT_EQ(back.cuda_error()->api, "cudaHostUnregister");
  EXPECT_EQ(back.cuda_error()->line, 12);
}

TEST(StatusJsonTest, MalformedInputIsAnInternalErrorNotACrash) {
  EXPECT_EQ(StatusFromJson(nlohmann::json::array()).code(), StatusCode::kInternal);
  EXPECT_EQ(StatusFromJson({{"code", 99}, {"message", "x"}}).code(), StatusCode::kInternal);
  EXPECT_EQ(StatusFromJson({{"code", 0}, {"message", "x"}}).code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace faultline
