// Provides what the per-failure gtests share: the runtime under test
// (simcuda, or cuda in the gpu-tagged targets) and transcript checks.
#ifndef FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_
#define FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/runtime/test_runtime.h"
#include "repro/runner.h"

// Declares `var` as the RuntimeKind under test, or fails saying why the
// runtime has no usable device (a gpu target never passes by skipping).
#define RUNTIME_UNDER_TEST(var)                  \
  auto var##_runtime = DeviceRuntimeUnderTest(); \
  FL_ASSERT_OK(var##_runtime);                   \
  const RuntimeKind var = (*var##_runtime)->kind()

namespace faultline {
namespace repro {

// Returns the groups captured by the first match of `pattern` in `text`
// (std::regex_search), or no groups when nothing matches. Here rather than
// in each test because <regex> adds seconds to the compile of every file
// that instantiates it.
std::vector<std::string> RegexGroups(const std::string& text, const std::string& pattern);

// Checks that `o` reproduced with exactly `signature`: the check the repro
// CLI's verdict makes (SignatureMismatch, through Reproduced), so the gtests
// and the CLI cannot drift apart.
inline void ExpectReproducedWith(const Outcome& o, const Signature& signature) {
  ASSERT_TRUE(o.error.has_value()) << o.transcript;
  EXPECT_EQ(SignatureMismatch(signature, *o.error), "") << o.transcript;
  EXPECT_EQ(VerdictName(o.verdict), std::string("reproduced")) << o.transcript;
}

// Checks that `o` passed, with no error, and that its transcript contains
// `text` (the line that says what the passing variant showed); a failure
// prints the transcript.
void ExpectPassedWith(const Outcome& o, const std::string& text);

// Returns the backtrace under "CUDA was first initialized in the parent (pid
// N) at:" in `transcript`: its frame lines ("  #0 ..."), or "" if none.
std::string InitializationBacktrace(const std::string& transcript);

// Checks that the transcript says where the parent initialized CUDA, with a
// frame of that backtrace naming `function` (simcuda records it; real CUDA
// does not), and no frame of libstdc++'s std::invoke / std::function
// plumbing between the user's frames.
inline void ExpectInitializationSiteNamed(const Outcome& o, RuntimeKind runtime, const std::string& function) {
  if (runtime != RuntimeKind::kSimCuda) return;
  const std::string backtrace = InitializationBacktrace(o.transcript);
  EXPECT_NE(backtrace, "") << o.transcript;
  EXPECT_NE(backtrace.find(function), std::string::npos) << function << " in\n" << o.transcript;
  EXPECT_EQ(backtrace.find("__invoke"), std::string::npos) << o.transcript;
}

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_REPRO_TEST_SUPPORT_H_
