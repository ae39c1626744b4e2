// Provides main() for every faultline gtest binary: it first runs a registered
// child entry point when the binary was spawned as a child of itself, and
// fails a test that starts threads without the "threaded" tag.
#include <gtest/gtest.h>

#include "reference/process/child_registry.h"
#include "reference/process/thread_census.h"

int main(int argc, char** argv) {
  int exit_code = 0;
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  faultline::CheckThreadCensusAtExit();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
