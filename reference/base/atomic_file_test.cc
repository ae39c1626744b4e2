// Checks WriteFileAtomically's temporary file: it is close-on-exec while it
// is written, so that a process another thread forks and execs meanwhile
// does not hold it, and no temporary is left when the write fails.
#include "reference/base/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace faultline {
namespace {

// The temporary file's descriptor flags (F_GETFD), as the SIGXFSZ handler
// saw them: -1 until it found the file.
volatile sig_atomic_t g_tmp_flags = -1;

// Runs in the writing thread when a write passes RLIMIT_FSIZE: looks
// through this process's descriptors for the temporary file
// (".<name>.tmp.XXXXXX") with async-signal-safe calls only.
void OnFileTooLarge(int) {
  for (int fd = 3; fd < 1024; ++fd) {
    char path[32] = "/proc/self/fd/";
    char digits[12];
    int n = 0;
    for (int v = fd; v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
    size_t at = std::strlen(path);
    while (n > 0) path[at++] = digits[--n];
    path[at] = '\0';
    char target[512];
    const ssize_t length = readlink(path, target, sizeof(target) - 1);
    if (length <= 0) continue;
    target[length] = '\0';
    if (std::strstr(target, "/.atomic_target.tmp.") != nullptr) g_tmp_flags = fcntl(fd, F_GETFD);
  }
}

// The temporary file is opened close-on-exec (mkostemp with O_CLOEXEC):
// with mkstemp, a child that another thread forked and exec'd while the
// file was written inherited it. A write past a 4 KiB file size limit
// stops the writer in the middle (SIGXFSZ, whose handler looks at the
// descriptor) and fails; run in a child process, which reports by its exit
// code, so that the limit does not reach this test.
TEST(AtomicFileTest, TheTemporaryFileIsCloseOnExecAndGoneAfterAFailedWrite) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  // A folder of its own on every run (--gtest_repeat runs this in the same process).
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/atomic_file_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << std::strerror(errno);
  const std::string path = dir + "/atomic_target";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct sigaction action {};
    action.sa_handler = OnFileTooLarge;
    sigaction(SIGXFSZ, &action, nullptr);
    const rlimit limit{4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
    const Status written = WriteFileAtomically(path, {std::string(8192, 'x')}, FileDurability::kVisible);
    if (written.ToString() != "unavailable: cannot write '" + path + "': write failed: File too large") _exit(11);
    if (g_tmp_flags < 0) _exit(12);  // the handler did not find the file
    _exit((g_tmp_flags & FD_CLOEXEC) != 0 ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << " (11: another error; 12: no temporary file seen; 13: not close-on-exec)";
  DIR* listing = opendir(dir.c_str());
  ASSERT_NE(listing, nullptr);
  while (dirent* entry = readdir(listing)) {
    EXPECT_TRUE(std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0)
        << "left behind: " << entry->d_name;
  }
  closedir(listing);
}

}  // namespace
}  // namespace faultline
