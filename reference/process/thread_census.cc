// Implements the thread census (see thread_census.h).
#include "reference/process/thread_census.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "reference/base/unique_fd.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULTLINE_THREAD_CENSUS 0
#else
#define FAULTLINE_THREAD_CENSUS 1
#endif

namespace faultline {
namespace {

bool EnvIs(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::strcmp(set, value) == 0;
}

// Empty when there is nothing to record: tagged, census off (GPU tests: the
// CUDA driver starts threads of its own), or outside Bazel.
std::string CensusPath() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (EnvIs("FAULTLINE_TEST_THREADED", "1") || EnvIs("FAULTLINE_THREAD_CENSUS", "off") || tmp == nullptr ||
      *tmp == '\0') {
    return "";
  }
  return std::string(tmp) + "/faultline-thread-census";
}

#if FAULTLINE_THREAD_CENSUS
std::atomic<bool> g_noted{false};

// Appends "pid <pid> (<exe>)" once per process; O_APPEND lines from several
// processes do not interleave.
void NoteThreadStart() {
  if (g_noted.exchange(true)) return;
  const std::string path = CensusPath();
  if (path.empty()) return;
  char exe[256] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char line[400];
  const int len = std::snprintf(line, sizeof(line), "pid %d (%s)\n", static_cast<int>(getpid()), n > 0 ? exe : "?");
  const UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd.valid()) return;
  if (len > 0) (void)!write(fd.get(), line, static_cast<size_t>(len));
}
#endif

}  // namespace

std::string UntaggedThreadsError() {
  const std::string path = CensusPath();
  if (path.empty()) return "";
  std::ifstream in(path);
  std::string first;
  if (!in || !std::getline(in, first)) return "";
  return "this test started a thread (first in " + first +
         ") but is not tagged \"threaded\": ci/test.sh's TSan stage runs only tagged tests, so add "
         "tags = [\"threaded\"] to it in its BUILD file (smoke_tags for a fuzz target; "
         "reference/process/thread_census.h)";
}

namespace {
pid_t g_checking_pid = 0;

void CheckAtExit() {
  if (getpid() != g_checking_pid) return;
  const std::string untagged = UntaggedThreadsError();
  if (untagged.empty()) return;
  std::fprintf(stderr, "FAILED: %s\n", untagged.c_str());
  std::fflush(nullptr);  // _exit does not flush: keep the test's own output
  _exit(1);
}
}  // namespace

void CheckThreadCensusAtExit() {
  g_checking_pid = getpid();
  std::atexit(CheckAtExit);
}

}  // namespace faultline

#if FAULTLINE_THREAD_CENSUS
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
  static const Create libc_create = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  if (libc_create == nullptr) return EAGAIN;
  faultline::NoteThreadStart();
  return libc_create(thread, attr, start, arg);
}
#endif
