// The sample command line: multi-layer neighbor sampling of a graph directory
// on the CPU reference, simcuda or cuda, printed as JSON or a summary.
// `sample --help` documents the flags, the JSON format and the exit codes.
#include <unistd.h>

#include <iostream>

#include "reference/cli/sample_cli.h"

int main(int argc, char** argv) {
  return faultline::cli::SampleMain(argc, argv, std::cout, std::cerr, ::isatty(STDERR_FILENO) != 0);
}
