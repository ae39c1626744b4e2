// Provides what the failures that load a library at run time share (F4's
// plugin, F6's backend): finding a file shipped as a Bazel runfile, and a
// dlopen'ed shared library that unloads itself.
#ifndef FAULTLINE_REPRO_SHARED_LIBRARY_H_
#define FAULTLINE_REPRO_SHARED_LIBRARY_H_

#include <string>

#include "reference/base/status.h"

namespace faultline {
namespace repro {

// Returns the path of `file`, a runfile of Bazel package `package` (e.g.
// "repro/F4"): `$env_var/file` when the environment variable `env_var` names
// a directory holding it (so a user can test their own build), else
// `<root>/faultline/<package>/<file>` under $RUNFILES_DIR or $TEST_SRCDIR
// (set by `bazel run` and `bazel test`), else under
// `<this binary>.runfiles`. NotFound, naming every path tried and
// `env_var`, when none is readable.
Result<std::string> FindRunfile(const std::string& package, const std::string& file, const char* env_var);

// A shared library loaded with dlopen; dlclose'd on destruction. Move-only:
// one owner per handle.
class SharedLibrary {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL). The library's static initializers
  // run inside this call, so a CUDA initialization they make is recorded
  // under glibc's dlopen frames (F4's and F6's signatures check for them).
  // Unavailable, naming `path` and dlerror(), when loading fails.
  static Result<SharedLibrary> Open(const std::string& path);

  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // Returns the address of symbol `name` (dlsym), or Internal naming the
  // path, the symbol and dlerror() when the library does not define it.
  Result<void*> Symbol(const std::string& name) const;

  // Symbol(name) as a pointer to a function of type `Fn`.
  template <typename Fn>
  Result<Fn*> Function(const std::string& name) const {
    FL_ASSIGN_OR_RETURN(void* address, Symbol(name));
    return reinterpret_cast<Fn*>(address);
  }

  const std::string& path() const { return path_; }

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void Close();

  void* handle_ = nullptr;  // null once moved from
  std::string path_;
};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_SHARED_LIBRARY_H_
