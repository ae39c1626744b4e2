// Provides what the loader tests share: a small on-disk dataset, loader
// options over it, and checks for shared-memory segments and processes
// left behind.
#ifndef FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_
#define FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_

#include <gtest/gtest.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include <chrono>
#include <cstdlib>

#include "reference/base/status.h"
#include "reference/loader/data_loader.h"
#include "reference/loader/fault_injection.h"
#include "reference/process/process_test_support.h"

namespace faultline {

// Writes a 400-node graph with 8-dimensional features once per test binary
// (13 minibatches of 32) in a fresh folder under DefaultTempBase(), removed
// with everything in it when the binary exits, and returns the folder.
const std::string& LoaderTestDatasetDir();

// Options over that dataset: fanouts {5, 3}, batches of 32, seed 11.
LoaderOptions LoaderTestOptions(int workers, StartMethod method);

// One descriptor of a process and what /proc/PID/fd links it to
// ("socket:[123]", "/memfd:NAME (deleted)", ...).
struct DescriptorTarget {
  std::string fd;
  std::string target;
};
// The descriptors of process `proc` ("/proc/self", "/proc/PID"); an error
// when they cannot be listed.
Result<std::vector<DescriptorTarget>> DescriptorTargets(const std::string& proc);
// The files process `proc` maps, one entry per mapping, from /proc/PID/maps
// ("/memfd:NAME (deleted)", "/usr/lib/..."); an error when it cannot be read.
Result<std::vector<std::string>> MappedFiles(const std::string& proc);

// Returns what process `proc` ("/proc/self", "/proc/PID") still holds of
// the segments whose names start with `prefix` (by default this process's
// loader prefix, LoaderSegmentPrefix()): each descriptor open on one
// ("fd 7: /memfd:NAME (deleted)") and each mapping of one ("mapped: /memfd:NAME (deleted)"). A segment lives as long as
// a descriptor or a mapping holds it, names or not, so this is what a leak is. An error when /proc cannot be read, so
// that a leak check can never pass by seeing nothing.
Result<std::vector<std::string>> LeakedSegments(const std::string& proc = "/proc/self",
                                                const std::string& prefix = LoaderSegmentPrefix());

// Sets the environment variable `name` for one scope (workers read it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// Sets the loader's fault injection (kInjectEnv) for one scope.
class ScopedInjection : public ScopedEnv {
 public:
  explicit ScopedInjection(const std::string& spec) : ScopedEnv(kInjectEnv, spec) {}
};

// Whether the file `path` exists within `limit` (a bounded wait for a
// worker's mark, kInjectStartedEnv; checked every millisecond).
bool AppearsWithin(const std::string& path, std::chrono::milliseconds limit);

// Succeeds when this process holds no descriptor and no mapping of a
// segment of its loaders (LeakedSegments): call it once every loader and
// every view is gone. (It does not look in /dev/shm: the loaders'
// segments are unnamed memfds, CreateUnlinkedSegment, so a name check
// could not fail.)
::testing::AssertionResult NoLeftoverSegments();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_LOADER_TEST_SUPPORT_H_
