// Checks RunRepeated: every run in a fresh process, counted against the
// variant's expectation, with the first mismatch kept for the report.
#include "repro/runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace faultline {
namespace repro {
namespace {

// A variant that passes on odd runs and fails on even ones: each run (a
// fresh process) increments a counter in a file named by the environment.
Outcome Alternating(RuntimeKind) {
  const char* path = std::getenv("FAULTLINE_RUNNER_TEST_COUNTER");
  int count = 0;
  if (path != nullptr) {
    std::ifstream in(path);
    in >> count;
  }
  ++count;
  if (path != nullptr) std::ofstream(path) << count;
  Outcome outcome;
  outcome.verdict = count % 2 == 1 ? Verdict::kPassed : Verdict::kFailed;
  outcome.transcript = "run " + std::to_string(count);
  return outcome;
}

const bool kRegistered = RegisterFailure(
    Failure{"T1", "test only: alternates between passing and failing", {Passes("fixed", "alternates", Alternating)}});

// A variant this machine cannot run: it never matches.
Outcome NeedsMoreGpus(RuntimeKind) {
  Outcome outcome;
  outcome.verdict = Verdict::kNotRun;
  outcome.not_run = "T2 needs 2 GPUs; NVML reports 1";
  return outcome;
}

const bool kRegisteredNotRun =
    RegisterFailure(Failure{"T2", "test only: cannot run here", {Passes("fixed", "needs more GPUs", NeedsMoreGpus)}});

// A variant whose process crashes before it reports.
Outcome Crashes(RuntimeKind) { std::abort(); }

const bool kRegisteredCrash =
    RegisterFailure(Failure{"T3", "test only: its process crashes", {Passes("fixed", "crashes", Crashes)}});

// A reproducing variant whose signature names the runtime it is asked for;
// the run reports the name it was given.
const bool kRegisteredSignature =
    RegisterFailure(Failure{"T4",
                            "test only: reports the signature it was given",
                            {Reproduces(
                                "legacy", "echoes its signature's name",
                                [](RuntimeKind runtime) {
                                  return Signature{std::string("for ") + RuntimeKindName(runtime), 0, "", "", ""};
                                },
                                [](RuntimeKind, const Signature& signature) {
                                  Outcome outcome;
                                  outcome.transcript = signature.name;
                                  return outcome;
                                })}});

TEST(RunIsolatedTest, AReproducingVariantRunsWithItsSignatureForTheRuntimeItRunsOn) {
  EXPECT_EQ(RunIsolated("T4", "legacy", RuntimeKind::kSimCuda).transcript, "for simcuda");
  EXPECT_EQ(RunIsolated("T4", "legacy", RuntimeKind::kCpu).transcript, "for cpu");
}

TEST(RunIsolatedTest, AVariantWhoseProcessCrashesSaysHowInItsTranscript) {
  const Outcome outcome = RunIsolated("T3", "fixed", RuntimeKind::kSimCuda);
  EXPECT_FALSE(Matches(Expectation::kPasses, outcome));
  EXPECT_FALSE(outcome.error.has_value());
  EXPECT_TRUE(outcome.transcript.rfind("the variant's process failed: pid ", 0) == 0) << outcome.transcript;
  EXPECT_NE(outcome.transcript.find(" was killed by signal 6 (Aborted)"), std::string::npos) << outcome.transcript;
}

TEST(RunIsolatedTest, AVariantThatCouldNotRunSaysWhyAndNeverMatches) {
  const Outcome outcome = RunIsolated("T2", "fixed", RuntimeKind::kSimCuda);
  EXPECT_EQ(outcome.not_run, "T2 needs 2 GPUs; NVML reports 1");  // crossed the process boundary
  EXPECT_FALSE(Matches(Expectation::kPasses, outcome));
  RepeatedOutcome repeated = RunRepeated("T2", "fixed", RuntimeKind::kSimCuda, 2);
  EXPECT_EQ(repeated.matched, 0);
  EXPECT_EQ(repeated.shown.not_run, outcome.not_run);
}

TEST(RunRepeatedTest, CountsMatchedRunsAndKeepsTheFirstMismatch) {
  const std::string counter = std::string(std::getenv("TEST_TMPDIR")) + "/counter";
  std::remove(counter.c_str());
  setenv("FAULTLINE_RUNNER_TEST_COUNTER", counter.c_str(), 1);
  std::string marks;
  RepeatedOutcome result = RunRepeated("T1", "fixed", RuntimeKind::kSimCuda, 5,
                                       [&marks](int run, bool matched) { marks += matched ? '.' : 'X'; });
  EXPECT_EQ(marks, ".X.X.");  // each run saw the previous run's count: separate processes, in order
  EXPECT_EQ(result.runs, 5);
  EXPECT_EQ(result.matched, 3);
  EXPECT_EQ(result.shown.transcript, "run 2");
  EXPECT_EQ(result.shown.verdict, Verdict::kFailed);
}

TEST(RunRepeatedTest, AllMatchedShowsTheLastRun) {
  const std::string counter = std::string(std::getenv("TEST_TMPDIR")) + "/counter1";
  std::remove(counter.c_str());
  setenv("FAULTLINE_RUNNER_TEST_COUNTER", counter.c_str(), 1);
  RepeatedOutcome result = RunRepeated("T1", "fixed", RuntimeKind::kSimCuda, 1);
  EXPECT_EQ(result.runs, 1);
  EXPECT_EQ(result.matched, 1);
  EXPECT_EQ(result.shown.transcript, "run 1");
}

TEST(RunRepeatedTest, AnUnknownVariantNeverMatches) {
  RepeatedOutcome result = RunRepeated("T1", "nope", RuntimeKind::kSimCuda, 2);
  EXPECT_EQ(result.runs, 2);
  EXPECT_EQ(result.matched, 0);
  EXPECT_EQ(result.shown.transcript, "no variant nope of T1 is registered");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
