// Provides TempDir: a fresh folder (mkdtemp) that is removed with everything
// in it when it goes out of scope.
// One implementation, so that every temporary folder is made under the same
// base and no folder is left behind because it held a file nobody listed.
#ifndef FAULTLINE_REFERENCE_BASE_TEMP_DIR_H_
#define FAULTLINE_REFERENCE_BASE_TEMP_DIR_H_

#include <sys/types.h>

#include <string>
#include <utility>

#include "reference/base/status.h"

namespace faultline {

// Returns the folder that temporary folders go in when the caller chooses
// none: $TEST_TMPDIR when set and non-empty (Bazel's per-test folder, which
// Bazel cleans and a sandbox lets the test write), else $TMPDIR when set and
// non-empty, else "/tmp".
std::string DefaultTempBase();

// A folder `base`/`prefix`XXXXXX made with mkdtemp (mode 0700), removed with
// all it holds (depth first, not following links) when the object is destroyed.
//
// Only the process that created the folder removes it: a forked child that
// ends through exit() runs the destructors of its copy of the parent's
// objects, and must not take the parent's folder away.
class TempDir {
 public:
  // Creates the folder; `base` empty means DefaultTempBase(). `what` says
  // what the folder is for, in the error: UnavailableError("cannot create
  // <what> (<base>/<prefix>XXXXXX): <strerror>").
  static Result<TempDir> Create(const std::string& base, const std::string& prefix, const std::string& what);

  // Moving hands the folder over: a moved-from TempDir removes nothing.
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  // The folder's path (`base`/`prefix` and six random characters); empty
  // once moved from.
  const std::string& path() const { return path_; }

 private:
  TempDir(std::string path, pid_t owner) : path_(std::move(path)), owner_(owner) {}
  // Removes the folder (when this process made it) and forgets it.
  void Remove() noexcept;

  std::string path_;
  pid_t owner_ = 0;  // the process that created the folder
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_TEMP_DIR_H_
