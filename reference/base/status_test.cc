#include "reference/base/status.h"
#include "reference/base/status_matchers.h"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

namespace faultline {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("x must be even, got " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  FL_ASSIGN_OR_RETURN(int half, Half(x));
  FL_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckQuarter(int x) {
  FL_RETURN_IF_ERROR(Quarter(x));
  return OkStatus();
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "x must be even, got 3");
  EXPECT_FALSE(CheckQuarter(6).ok());
  FL_EXPECT_OK(CheckQuarter(4));
}

TEST(StatusTest, ToStringKeepsCudaDetail) {
  CudaErrorInfo info{
      3, "cudaErrorInitializationError", "initialization error", "cudaGetDeviceCount", "reference/runtime/x.cc", 12};
  Status s(info, "device count failed");
  EXPECT_EQ(s.code(), StatusCode::kDeviceError);
  EXPECT_EQ(s.ToString(),
            "device_error: device count failed [cudaErrorInitializationError (3): \"initialization "
            "error\" in cudaGetDeviceCount at reference/runtime/x.cc:12]");
  EXPECT_EQ(s.WithContext("worker 1").message(), "worker 1: device count failed");
  EXPECT_TRUE(s.WithContext("w").cuda_error().has_value());
}

TEST(StatusTest, ResultFromOkStatusIsAnInternalError) {
  Result<int> r{OkStatus()};
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(StatusDeathTest, TakingTheValueOfAFailedResultAbortsWithItsStatus) {
  Result<int> bad = Quarter(6);
  EXPECT_DEATH((void)*bad,
               "the value of a failed Result was accessed; its status: invalid_argument: x must be even, got 3");
  EXPECT_DEATH((void)bad.value(), "invalid_argument: x must be even");
  Result<std::string> missing = NotFoundError("no such graph");
  EXPECT_DEATH((void)missing->size(), "not_found: no such graph");
}

TEST(StatusMatchersTest, StatusIsMatchesCodeAndMessage) {
  using ::testing::HasSubstr;
  using ::testing::Not;
  Result<int> bad = Quarter(6);
  EXPECT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, "x must be even, got 3"));
  EXPECT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("even")));
  EXPECT_THAT(bad, StatusIs(StatusCode::kInvalidArgument));
  EXPECT_THAT(bad, Not(StatusIs(StatusCode::kOutOfRange)));
  EXPECT_THAT(bad.status(), Not(StatusIs(StatusCode::kInvalidArgument, HasSubstr("odd"))));
  EXPECT_THAT(OkStatus(), StatusIs(StatusCode::kOk));
}

TEST(StatusMatchersTest, AssertOkAndAssignDeclaresTheValue) {
  FL_ASSERT_OK_AND_ASSIGN(const int quarter, Quarter(8));
  EXPECT_EQ(quarter, 2);
  FL_ASSERT_OK(CheckQuarter(4));
}

TEST(StatusMatchersTest, AFailedCheckPrintsTheExpressionItsStatusAndTheContext) {
  EXPECT_NONFATAL_FAILURE(FL_EXPECT_OK(CheckQuarter(6)) << "while checking 6",
                          "CheckQuarter(6) is not OK: invalid_argument: x must be even, got 3 while checking 6");
  EXPECT_FATAL_FAILURE(FL_ASSERT_OK(Quarter(6)) << "while quartering 6",
                       "Quarter(6) is not OK: invalid_argument: x must be even, got 3 while quartering 6");
  EXPECT_FATAL_FAILURE(
      {
        FL_ASSERT_OK_AND_ASSIGN(const int quarter, Quarter(6));
        (void)quarter;
      },
      "Quarter(6) is not OK: invalid_argument: x must be even, got 3");
}

TEST(StatusMatchersTest, AnElseAfterTheCheckBelongsToTheEnclosingIf) {
  bool took_else = false;
  if (took_else)
    FL_EXPECT_OK(CheckQuarter(6));
  else
    took_else = true;
  EXPECT_TRUE(took_else);
}

}  // namespace
}  // namespace faultline
