// Provides what the per-failure gtests share: the runtime under test
// (simcuda, or cuda in the gpu-tagged targets) and transcript checks.
#ifndef FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_
#define FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <string>

#include "reference/runtime/test_runtime.h"
#include "repro/runner.h"

// Declares `var` as the RuntimeKind under test, or fails saying why the
// runtime has no usable device (a gpu target never passes by skipping).
#define RUNTIME_UNDER_TEST(var)                                           \
  auto var##_runtime = DeviceRuntimeUnderTest();                          \
  ASSERT_TRUE(var##_runtime.ok()) << var##_runtime.status();              \
  const RuntimeKind var = (*var##_runtime)->kind()

namespace faultline {
namespace repro {

// Returns whether all of `text` matches the ECMAScript regex `pattern`
// (std::regex_match). Here rather than in each test because <regex> adds
// seconds to the compile of every file that instantiates it.
bool RegexFullMatch(const std::string& text, const std::string& pattern);
// Returns whether some part of `text` matches `pattern` (std::regex_search).
bool RegexSearch(const std::string& text, const std::string& pattern);

// Checks that the transcript says where the parent initialized CUDA, naming
// `function` (simcuda records it; real CUDA does not).
inline void ExpectInitializationSiteNamed(const Outcome& o, RuntimeKind runtime, const std::string& function) {
  if (runtime != RuntimeKind::kSimCuda) return;
  EXPECT_NE(o.transcript.find("CUDA was first initialized in the parent (pid "), std::string::npos) << o.transcript;
  EXPECT_NE(o.transcript.find(function), std::string::npos) << o.transcript;
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_
