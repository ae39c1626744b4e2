// Implements CurrentPythonStack over CPython's exported symbols, looked up
// at run time so that a process without Python pays nothing.
#include "reference/runtime/python_stack.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utility>

#include "reference/base/fd_io.h"
#include "reference/base/unique_fd.h"

namespace faultline {

std::string CurrentPythonStack() {
  using GetThreadState = void* (*)();
  using DumpTraceback = void (*)(int fd, void* thread_state);
  // Both are exported by every CPython 3 (libpython or the executable).
  auto get_state = reinterpret_cast<GetThreadState>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  auto dump = reinterpret_cast<DumpTraceback>(dlsym(RTLD_DEFAULT, "_Py_DumpTraceback"));
  if (get_state == nullptr || dump == nullptr) return "";
  void* state = get_state();
  if (state == nullptr) return "";
  const UniqueFd fd(memfd_create("simcuda-python-stack", MFD_CLOEXEC));
  if (!fd.valid()) return "";
  // Reads frames only (no allocation, no GIL), as from a signal handler.
  dump(fd.get(), state);
  std::string text;
  if (lseek(fd.get(), 0, SEEK_SET) == 0) {
    if (Result<std::string> read = ReadToEnd(fd.get()); read.ok()) text = *std::move(read);
  }
  return text;
}

}  // namespace faultline
