// Linked into every <target>_smoke test (fl_fuzz_target): the standalone
// driver's main is not the gtest one, so the thread census check
// (reference/process/thread_census.h) is registered here, at start-up.
#include "reference/process/thread_census.h"

namespace {
const bool kRegistered = [] {
  faultline::CheckThreadCensusAtExit();
  return true;
}();
}  // namespace
