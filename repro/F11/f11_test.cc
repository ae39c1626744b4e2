// Checks F11's variants, each in a fresh process, on simcuda (and on real CUDA
// in the gpu-tagged target; the failure is host-only, so both must agree).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "repro/F11/signature.h"
#include "repro/repro_test_support.h"

namespace faultline {
namespace repro {
namespace {

TEST(F11Test, LegacyNumbersIdsInInsertionOrderSoTheScheduleChangesTheOutput) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F11", "legacy", runtime);
  ExpectReproducedWith(o, kF11Legacy);
  // The same legacy code under the other interleaving gives the reference.
  EXPECT_THAT(o.transcript,
              testing::HasSubstr("2 workers, inserting in order 0 1: equal to the first-appearance reference"))
      << o.transcript;
}

TEST(F11Test, FixedGivesFirstAppearanceOrderUnderEverySchedule) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F11", "fixed", runtime);
  for (const char* schedule : {"2 workers, inserting in order 0 1", "2 workers, inserting in order 1 0",
                               "4 workers, inserting in order 3 2 1 0", "4 workers, free-running"}) {
    SCOPED_TRACE(schedule);
    ExpectPassedWith(o, std::string(schedule) + ": equal to the first-appearance reference");
  }
}

TEST(F11Test, WorkaroundOneWorkerGivesTheReference) {
  RUNTIME_UNDER_TEST(runtime);
  Outcome o = RunIsolated("F11", "workaround", runtime);
  ExpectPassedWith(o, "1 worker: equal to the first-appearance reference");
}

}  // namespace
}  // namespace repro
}  // namespace faultline
