// Implements TempDir (temp_dir.h) over mkdtemp and nftw.
#include "reference/base/temp_dir.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace faultline {
namespace {

// Returns the environment variable `name` when it is set and not empty, else null.
const char* NonEmptyEnv(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  // FTW_DEPTH reports a folder after its contents (FTW_DP), or as FTW_DNR
  // when it could not be read (then rmdir removes it only if it is empty).
  // With FTW_PHYS a symbolic link is FTW_SL and is unlinked, not followed.
  (void)(type == FTW_DP || type == FTW_DNR ? rmdir(path) : unlink(path));
  return 0;  // go on: remove what can be removed
}

// Removes `dir` and everything in it, depth first, without following
// symbolic links (a link is removed, never what it points to). It goes on
// past an entry it cannot remove, so that whatever can go does; nothing is
// reported (it runs in destructors).
void RemoveTree(const std::string& dir) {
  if (dir.empty()) return;
  (void)nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

std::string DefaultTempBase() {
  if (const char* test_tmpdir = NonEmptyEnv("TEST_TMPDIR")) return test_tmpdir;
  if (const char* tmpdir = NonEmptyEnv("TMPDIR")) return tmpdir;
  return "/tmp";
}

Result<TempDir> TempDir::Create(const std::string& base, const std::string& prefix, const std::string& what) {
  const std::string pattern = (base.empty() ? DefaultTempBase() : base) + "/" + prefix + "XXXXXX";
  std::string path = pattern;  // mkdtemp fills in the X's
  if (mkdtemp(path.data()) == nullptr) {
    const int error = errno;
    return UnavailableError("cannot create " + what + " (" + pattern + "): " + std::strerror(error));
  }
  return TempDir(std::move(path), getpid());
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), owner_(other.owner_) {
  other.path_.clear();  // a moved-from string is only "valid but unspecified"
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::move(other.path_);
    owner_ = other.owner_;
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() { Remove(); }

void TempDir::Remove() noexcept {
  if (!path_.empty() && owner_ == getpid()) RemoveTree(path_);
  path_.clear();
}

}  // namespace faultline
