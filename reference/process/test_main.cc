// Provides main() for every faultline gtest binary: it first runs a registered
// child entry point when the binary was spawned as a child of itself.
#include <gtest/gtest.h>

#include "reference/process/child_registry.h"

int main(int argc, char** argv) {
  int exit_code = 0;
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
