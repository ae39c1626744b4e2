// Checks the thread census (thread_census.h) from a forked child, as the
// census sees a test's children: an untagged process that starts a thread
// is named; a tagged one, a census switched off, or a sanitizer build
// (where the census is compiled out) report nothing.
#include "reference/process/thread_census.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace faultline {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCensusBuilt = false;
#else
constexpr bool kCensusBuilt = true;
#endif

// Points the census at a fresh folder with the given settings for one
// scope; the test's own tag (FAULTLINE_TEST_THREADED=1) is restored after.
class CensusEnvironment {
 public:
  CensusEnvironment(const char* threaded, const char* census) {
    char pattern[] = "/tmp/faultline-census-XXXXXX";
    dir_ = mkdtemp(pattern);
    saved_tmpdir_ = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "";
    setenv("TEST_TMPDIR", dir_.c_str(), 1);
    setenv("FAULTLINE_TEST_THREADED", threaded, 1);
    if (census != nullptr) setenv("FAULTLINE_THREAD_CENSUS", census, 1);
  }
  ~CensusEnvironment() {
    std::remove((dir_ + "/faultline-thread-census").c_str());
    rmdir(dir_.c_str());
    setenv("TEST_TMPDIR", saved_tmpdir_.c_str(), 1);
    setenv("FAULTLINE_TEST_THREADED", "1", 1);
    unsetenv("FAULTLINE_THREAD_CENSUS");
  }

 private:
  std::string dir_, saved_tmpdir_;
};

// Forks a child that starts and joins one thread; returns its pid.
pid_t ChildStartsAThread() {
  const pid_t pid = fork();
  if (pid == 0) {
    std::thread([] {}).join();
    _exit(0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return pid;
}

TEST(ThreadCensusTest, AnUntaggedChildThatStartsAThreadIsNamed) {
  CensusEnvironment untagged("0", nullptr);
  const pid_t pid = ChildStartsAThread();
  if (kCensusBuilt) {
    EXPECT_THAT(
        UntaggedThreadsError(),
        testing::AllOf(testing::HasSubstr("this test started a thread (first in pid " + std::to_string(pid) + " ("),
                       testing::HasSubstr("thread_census_test)) but is not tagged \"threaded\"")));
  } else {
    EXPECT_EQ(UntaggedThreadsError(), "");  // sanitizer builds: their runtimes own pthread_create
  }
}

TEST(ThreadCensusTest, ATaggedTestOrACensusSwitchedOffReportsNothing) {
  {
    CensusEnvironment tagged("1", nullptr);
    ChildStartsAThread();
    EXPECT_EQ(UntaggedThreadsError(), "");
  }
  {
    CensusEnvironment off("0", "off");
    ChildStartsAThread();
    EXPECT_EQ(UntaggedThreadsError(), "");
  }
}

TEST(ThreadCensusTest, AnUntaggedChildWithoutThreadsReportsNothing) {
  CensusEnvironment untagged("0", nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(UntaggedThreadsError(), "");
}

}  // namespace
}  // namespace faultline
