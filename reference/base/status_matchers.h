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

// Asserts that a Status or Result<T> is OK, printing it otherwise.
#define FL_ASSERT_OK(expr)                                                   \
  do {                                                                       \
    const auto& _fl_value = (expr);                                          \
    ASSERT_TRUE(_fl_value.ok()) << ::faultline::testing_internal::AsStatus(_fl_value); \
  } while (0)

// Declares `lhs` from an OK Result, or fails the test printing the status.
#define FL_ASSERT_OK_AND_ASSIGN(lhs, expr) FL_ASSERT_OK_AND_ASSIGN_IMPL(FL_CONCAT(_fl_result_, __LINE__), lhs, expr)
#define FL_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  ASSERT_TRUE(tmp.ok()) << tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // FAULTLINE_REFERENCE_BASE_STATUS_MATCHERS_H_
