// Checks the signature check the repro CLI's verdict and the per-failure
// gtests share: every field must be as documented, and one field off is a
// mismatch that names it; and the two endings every scenario shares, under
// each expectation.
#include "repro/registry.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

const Signature kSignature{"cudaErrorInitializationError", 3,
                           Pattern(R"(worker \d+ \(pid \d+\) failed: initialization error)"),
                           ProcessWithPid(R"(worker \d+)"), "sample_neighbors"};

ObservedError Exact() {
  return ObservedError{"cudaErrorInitializationError", 3, "worker 1 (pid 4242) failed: initialization error",
                       "worker 1 (pid 4242)", "sample_neighbors"};
}

// Expects `error` to miss kSignature on `field` alone, in SignatureMismatch
// and in the CLI's verdict on the outcome Reproduced makes of it.
void ExpectOnlyFieldDiffers(const ObservedError& error, const std::string& field) {
  SCOPED_TRACE("a different " + field);
  const std::string mismatch = SignatureMismatch(kSignature, error);
  EXPECT_EQ(mismatch.rfind(field + ": expected ", 0), 0u) << mismatch;
  EXPECT_EQ(mismatch.find('\n'), mismatch.size() - 1) << "one line only:\n" << mismatch;
  EXPECT_FALSE(Matches(kSignature, error));
  const Outcome outcome = Reproduced(kSignature, error, "");
  EXPECT_FALSE(Matches(Expectation::kReproduces, outcome)) << outcome.transcript;
  EXPECT_NE(outcome.transcript.find("not the documented signature:\n" + mismatch), std::string::npos)
      << outcome.transcript;
}

TEST(SignatureTest, AnExactMatchMatches) {
  EXPECT_EQ(SignatureMismatch(kSignature, Exact()), "");
  EXPECT_TRUE(Matches(kSignature, Exact()));
  EXPECT_TRUE(Matches(Expectation::kReproduces, Reproduced(kSignature, Exact(), "")));
}

TEST(SignatureTest, EachFieldThatDiffersIsAMismatchNamingIt) {
  ObservedError name = Exact();
  name.name = "cudaErrorInitializationErrorX";
  ExpectOnlyFieldDiffers(name, "name");

  ObservedError code = Exact();
  code.code = 0;  // 0 is a code like any other, not "no code"
  ExpectOnlyFieldDiffers(code, "code");

  ObservedError message = Exact();
  message.message += "; and more";  // the whole message must match, not a prefix
  ExpectOnlyFieldDiffers(message, "message");

  ObservedError process = Exact();
  process.process = "worker 1";
  ExpectOnlyFieldDiffers(process, "process");

  ObservedError step = Exact();
  step.step = "sample_neighbors_x";
  ExpectOnlyFieldDiffers(step, "step");
}

TEST(SignatureTest, CodeZeroMeansZeroAndNoCodeMeansAny) {
  Signature zero = kSignature;
  zero.code = 0;
  ObservedError error = Exact();
  EXPECT_FALSE(Matches(zero, error));
  error.code = 0;
  EXPECT_TRUE(Matches(zero, error));
  Signature any = kSignature;
  any.code = std::nullopt;
  error.code = 713;
  EXPECT_TRUE(Matches(any, error));
}

TEST(SignatureTest, PlainTextIsExactAndQuotedTextMatchesItselfOnly) {
  const std::string text = "nid2partid: can't convert cuda:0 (a [6] tensor) to numpy. Use Tensor.cpu() first.";
  Signature exact = kSignature;
  exact.message = text;
  ObservedError error = Exact();
  error.message = text;
  EXPECT_TRUE(Matches(exact, error));
  Signature quoted = kSignature;
  quoted.message = Pattern(Quote(text));
  EXPECT_TRUE(Matches(quoted, error));
  error.message = text.substr(0, text.size() - 1);
  EXPECT_FALSE(Matches(exact, error));
  EXPECT_FALSE(Matches(quoted, error));
  error.message = "nid2partid: can't convert cuda:0 (a [6] tensor) to numpy! Use Tensor.cpu() first.";
  EXPECT_FALSE(Matches(quoted, error));  // "." is quoted: it matches only a dot
}

TEST(SignatureTest, AnInvalidPatternIsAMismatchThatSaysSo) {
  Signature broken = kSignature;
  broken.message = Pattern("worker (");
  const std::string mismatch = SignatureMismatch(broken, Exact());
  EXPECT_NE(mismatch.find("message: expected a match of /worker (/ (not a valid regex: "), std::string::npos)
      << mismatch;
}

TEST(ExpectedTest, AnErrorReproducesOnlyWhereASignatureWasExpected) {
  const Outcome reproduced = EndedInError(ExpectSignature{kSignature}, Exact(), "header\n");
  EXPECT_EQ(VerdictName(reproduced.verdict), std::string("reproduced")) << reproduced.transcript;
  EXPECT_EQ(reproduced.transcript.rfind("header\nerror: cudaErrorInitializationError (3): ", 0), 0u)
      << reproduced.transcript;
  const Outcome unexpected = EndedInError(ExpectPass{}, Exact(), "header\n");
  EXPECT_EQ(VerdictName(unexpected.verdict), std::string("failed")) << unexpected.transcript;
  EXPECT_EQ(unexpected.transcript.rfind("header\nunexpected error: ", 0), 0u) << unexpected.transcript;
  ASSERT_TRUE(unexpected.error.has_value());
  EXPECT_EQ(unexpected.error->name, "cudaErrorInitializationError");
}

TEST(ExpectedTest, RunningToTheEndFailsWhereASignatureWasExpected) {
  const std::optional<Outcome> missed = RanToTheEnd(ExpectSignature{kSignature}, "the loader ran to the end", "h\n");
  ASSERT_TRUE(missed.has_value());
  EXPECT_EQ(VerdictName(missed->verdict), std::string("failed"));
  EXPECT_EQ(missed->transcript, "h\nFAILED: not the documented failure (the loader ran to the end)\n");
  EXPECT_FALSE(Matches(Expectation::kReproduces, *missed));
  EXPECT_FALSE(RanToTheEnd(ExpectPass{}, "the loader ran to the end", "h\n").has_value());
}

}  // namespace
}  // namespace repro
}  // namespace faultline
