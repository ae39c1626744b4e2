// Provides what the loader tests share: a small on-disk dataset, loader
// options over it, and a check for shared-memory segments left behind.
#ifndef FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_
#define FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/loader/data_loader.h"

namespace faultline {

// Writes a 400-node graph with 8-dimensional features once per test binary
// (13 minibatches of 32) and returns its directory.
const std::string& LoaderTestDatasetDir();

// Options over that dataset: fanouts {5, 3}, batches of 32, seed 11.
LoaderOptions LoaderTestOptions(int workers, StartMethod method);

// Returns the segments in `dir` whose names start with `prefix` (by default
// this process's loader prefix, LoaderSegmentPrefix()); an error when `dir`
// cannot be read, so that a leak check can never pass by seeing nothing.
Result<std::vector<std::string>> LeftoverSegments(const std::string& dir = "/dev/shm",
                                                  const std::string& prefix = LoaderSegmentPrefix());

// Succeeds when /dev/shm holds no segment of this process's loaders.
::testing::AssertionResult NoLeftoverSegments();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_
