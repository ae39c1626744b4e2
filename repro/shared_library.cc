// Implements runfile lookup and SharedLibrary (repro/shared_library.h).
#include "repro/shared_library.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "reference/process/process.h"

namespace faultline {
namespace repro {
namespace {

bool Readable(const std::string& path) { return access(path.c_str(), R_OK) == 0; }

// dlerror() once: it clears the error, and is null when there was none.
std::string LastDlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "no dlerror";
}

}  // namespace

Result<std::string> FindRunfile(const std::string& package, const std::string& file, const char* env_var) {
  std::string tried;
  if (const char* dir = std::getenv(env_var); dir && *dir) {
    const std::string path = std::string(dir) + "/" + file;
    if (Readable(path)) return path;
    tried += path + " ";
  }
  // The workspace is named "faultline" (WORKSPACE), so its runfiles sit under that name.
  // Under `bazel test` and `bazel run` the runfiles root is in the
  // environment: a binary that is another target's data has no runfiles
  // tree of its own there.
  for (const char* root : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(root); dir && *dir) {
      const std::string path = std::string(dir) + "/faultline/" + package + "/" + file;
      if (Readable(path)) return path;
      tried += path + " ";
    }
  }
  FL_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  const std::string path = self + ".runfiles/faultline/" + package + "/" + file;
  if (Readable(path)) return path;
  tried += path;
  return NotFoundError(file + " not found; tried " + tried + " (set " + env_var + ")");
}

Result<SharedLibrary> SharedLibrary::Open(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return UnavailableError("dlopen " + path + " failed: " + LastDlError());
  return SharedLibrary(handle, path);
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    Close();
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() { Close(); }

void SharedLibrary::Close() {
  // A failed dlclose leaves the library loaded: nothing to recover here.
  if (handle_ != nullptr) dlclose(handle_);
  handle_ = nullptr;
}

Result<void*> SharedLibrary::Symbol(const std::string& name) const {
  // dlsym(nullptr, ...) would search the whole process (RTLD_DEFAULT).
  if (handle_ == nullptr) return FailedPreconditionError("no library is open to look up " + name + " in");
  (void)dlerror();  // clear a stale error, so the one below is dlsym's
  void* address = dlsym(handle_, name.c_str());
  if (address == nullptr) return InternalError(path_ + " has no " + name + ": " + LastDlError());
  return address;
}

}  // namespace repro
}  // namespace faultline
