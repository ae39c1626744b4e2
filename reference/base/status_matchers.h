// Provides GoogleTest helpers for Status and Result<T> (after tensorstore's
// status_testutil.h): the StatusIs matcher and assert-ok macros, so a test
// states the code and message it expects and a failure prints the status.
#ifndef FAULTLINE_REFERENCE_BASE_STATUS_MATCHERS_H_
#define FAULTLINE_REFERENCE_BASE_STATUS_MATCHERS_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "reference/base/macros.h"
#include "reference/base/status.h"

namespace faultline {
namespace testing_internal {

inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const Result<T>& r) {
  return r.status();
}

MATCHER_P2(StatusIsMatcher, code, message_matcher,
           std::string("has code ") + StatusCodeName(code) + " and a message that " +
               ::testing::DescribeMatcher<const std::string&>(message_matcher, negation)) {
  const Status& s = AsStatus(arg);
  *result_listener << "whose status is " << s;
  return s.code() == code && message_matcher.Matches(s.message());
}

}  // namespace testing_internal

// Matches a Status or Result<T> with `code` and a message matching
// `message` (a string for equality, or any matcher such as HasSubstr).
template <typename MessageMatcher>
auto StatusIs(StatusCode code, MessageMatcher message) {
  return testing_internal::StatusIsMatcher(code, ::testing::Matcher<const std::string&>(message));
}
inline auto StatusIs(StatusCode code) { return StatusIs(code, ::testing::A<const std::string&>()); }

}  // namespace faultline

// Asserts that a Status or Result<T> is OK, or fails the test printing the
// expression and its status; more context may be streamed after it:
//   FL_ASSERT_OK(loader->Next()) << "minibatch " << i;
#define FL_ASSERT_OK(expr) FL_STATUS_OK_IMPL_(#expr, expr, FAIL)

// As FL_ASSERT_OK, but a failure does not end the test (ADD_FAILURE).
#define FL_EXPECT_OK(expr) FL_STATUS_OK_IMPL_(#expr, expr, ADD_FAILURE)

// The switch guards against a dangling else, like gtest's
// GTEST_AMBIGUOUS_ELSE_BLOCKER_: `if (c) FL_EXPECT_OK(x); else ...` keeps
// its else. `fail` is FAIL or ADD_FAILURE; the trailing " " separates the
// status from a streamed message.
#define FL_STATUS_OK_IMPL_(text, expr, fail)                            \
  switch (0)                                                            \
  case 0:                                                               \
  default:                                                              \
    if (const auto& _fl_status_value = (expr); _fl_status_value.ok()) { \
    } else                                                              \
      fail() << text << " is not OK: " << ::faultline::testing_internal::AsStatus(_fl_status_value) << " "

// Declares `lhs` from an OK Result, or fails the test printing the status.
#define FL_ASSERT_OK_AND_ASSIGN(lhs, expr) FL_ASSERT_OK_AND_ASSIGN_IMPL(FL_CONCAT(_fl_result_, __LINE__), lhs, expr)
#define FL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  FL_STATUS_OK_IMPL_(#expr, tmp, FAIL);              \
  lhs = std::move(tmp).value()

#endif  // FAULTLINE_REFERENCE_BASE_STATUS_MATCHERS_H_
