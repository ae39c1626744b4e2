#include "reference/process/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "reference/base/fd_io.h"
#include "reference/base/status_matchers.h"
#include "reference/process/child_registry.h"
#include "reference/process/process_test_support.h"

namespace faultline {
namespace {

using std::chrono::milliseconds;

int EchoArgsAndEnv(const std::vector<std::string>& args) {
  std::string text = "args:";
  for (const auto& a : args) text += " " + a;
  const char* value = std::getenv("FAULTLINE_TEST_VALUE");
  text += "; env: " + std::string(value ? value : "(unset)");
  ReportToParent(text);
  return static_cast<int>(args.size());
}
FL_REGISTER_CHILD("echo_args_and_env", EchoArgsAndEnv);

int SleepForever(const std::vector<std::string>&) {
  ReportToParent("sleeping");
  for (;;) pause();
}
FL_REGISTER_CHILD("sleep_forever", SleepForever);

TEST(ProcessTest, ForkedChildReportsAndExits) {
  auto child = ChildProcess::Fork([] {
    ReportToParent("hello from ");
    ReportToParent(std::to_string(getpid()));
    return 7;
  });
  FL_ASSERT_OK(child);
  pid_t pid = child->pid();
  auto exit = child->Wait(milliseconds(10000));
  FL_ASSERT_OK(exit);
  EXPECT_EQ(exit->end, ChildEnd::kExited);
  EXPECT_EQ(exit->exit_code, 7);
  EXPECT_EQ(exit->transcript, "hello from " + std::to_string(pid));
  EXPECT_EQ(exit->Describe(), "pid " + std::to_string(pid) + " exited with code 7");
}

// An exception that escapes a forked body must not unwind into the child's
// copy of this test (gtest would catch it there and the child would go on
// to run the next tests): the child reports it and exits with
// kUncaughtExceptionExitCode.
TEST(ProcessTest, AnExceptionThatEscapesAForkedBodyIsReportedAndEndsTheChild) {
  struct NotAStdException {};
  const std::pair<std::function<int()>, std::string> cases[] = {
      {[]() -> int { throw std::runtime_error("boom"); },
       "uncaught exception std::runtime_error: boom in the forked child"},
      {[]() -> int { throw std::bad_alloc(); },
       "uncaught exception std::bad_alloc: std::bad_alloc in the forked child"},
      {[]() -> int { throw NotAStdException(); },
       "uncaught exception faultline::(anonymous namespace)::"
       "ProcessTest_AnExceptionThatEscapesAForkedBodyIsReportedAndEndsTheChild_Test::TestBody()::NotAStdException "
       "in the forked child"},
  };
  for (const auto& [body, report] : cases) {
    auto child = ChildProcess::Fork(body);
    FL_ASSERT_OK(child);
    auto exit = child->Wait(milliseconds(20000));
    FL_ASSERT_OK(exit);
    EXPECT_TRUE(exit->exited()) << exit->Describe();
    EXPECT_EQ(exit->exit_code, kUncaughtExceptionExitCode) << exit->Describe() << "; transcript: " << exit->transcript;
    EXPECT_EQ(exit->transcript, report);
  }
}

int ThrowInSpawnedChild(const std::vector<std::string>&) { throw std::runtime_error("boom"); }
FL_REGISTER_CHILD("throw_in_spawned_child", ThrowInSpawnedChild);

// The same for a spawned child's entry point: before, std::terminate
// aborted it and the parent learnt only "killed by signal 6".
TEST(ProcessTest, AnExceptionThatEscapesASpawnedEntryPointIsReportedAndEndsTheChild) {
  auto child = ChildProcess::Spawn("throw_in_spawned_child", {});
  FL_ASSERT_OK(child);
  auto exit = child->Wait(milliseconds(20000));
  FL_ASSERT_OK(exit);
  EXPECT_TRUE(exit->exited()) << exit->Describe();
  EXPECT_EQ(exit->exit_code, kUncaughtExceptionExitCode) << exit->Describe();
  EXPECT_EQ(exit->transcript,
            "uncaught exception std::runtime_error: boom in spawned child entry point 'throw_in_spawned_child'");
}

TEST(ProcessTest, SpawnedChildRunsRegisteredEntryWithArgsAndEnv) {
  SpawnOptions options;
  options.env = {{"FAULTLINE_TEST_VALUE", "spawned"}};
  auto child = ChildProcess::Spawn("echo_args_and_env", {"a", "b c"}, options);
  FL_ASSERT_OK(child);
  auto exit = child->Wait(milliseconds(20000));
  FL_ASSERT_OK(exit);
  EXPECT_EQ(exit->exit_code, 2);
  EXPECT_EQ(exit->transcript, "args: a b c; env: spawned");
}

TEST(ProcessTest, AnUnknownEntryIsRefusedBeforeAnyChildStarts) {
  auto child = ChildProcess::Spawn("no_such_entry", {});
  EXPECT_EQ(child.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(child.status().message(),
            "cannot spawn a child at entry point 'no_such_entry': this binary registers none of that name "
            "(FL_REGISTER_CHILD)");
}

// Run from a copy of this binary: deletes the copy (as a rebuild replaces a
// binary under a long run), then spawns; 0 when the spawned child ran.
int SpawnAfterTheBinaryIsDeleted(const std::vector<std::string>&) {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return 10;
  path[n] = '\0';
  if (unlink(path) != 0) return 11;
  auto child = ChildProcess::Spawn("echo_args_and_env", {"x"});
  if (!child.ok()) return 12;
  auto exit = child->Wait(milliseconds(20000));
  return exit.ok() && exit->exited() && exit->exit_code == 1 && exit->transcript.rfind("args: x;", 0) == 0 ? 0 : 13;
}
FL_REGISTER_CHILD("spawn_after_the_binary_is_deleted", SpawnAfterTheBinaryIsDeleted);

TEST(ProcessTest, SpawningStillWorksAfterTheBinaryIsDeleted) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string copy = std::string(tmp ? tmp : "/tmp") + "/process_test_copy_" + std::to_string(getpid());
  std::ifstream in("/proc/self/exe", std::ios::binary);
  std::ofstream(copy, std::ios::binary) << in.rdbuf();
  ASSERT_EQ(chmod(copy.c_str(), 0755), 0) << copy;
  auto child = ChildProcess::Fork([&] {
    std::string flag = std::string(kChildFlag) + "spawn_after_the_binary_is_deleted";
    char* argv[] = {const_cast<char*>(copy.c_str()), flag.data(), nullptr};
    execv(copy.c_str(), argv);
    return 20;
  });
  FL_ASSERT_OK(child);
  auto exit = child->Wait(milliseconds(60000));
  FL_ASSERT_OK(exit);
  EXPECT_TRUE(exit->succeeded()) << exit->Describe() << " (10-13: see SpawnAfterTheBinaryIsDeleted)";
  EXPECT_NE(access(copy.c_str(), F_OK), 0) << "the copy was not deleted";
  unlink(copy.c_str());
}

TEST(ProcessTest, KilledChildReportsTheSignal) {
  auto child = ChildProcess::Spawn("sleep_forever", {});
  FL_ASSERT_OK(child);
  // It reports "sleeping" once it runs its entry point; kill it from outside then.
  Status running = child->WaitForTranscript("sleeping", milliseconds(20000));
  FL_ASSERT_OK(running);
  ASSERT_TRUE(child->running());
  child->Kill(SIGKILL);
  auto exit = child->Wait(milliseconds(10000));
  FL_ASSERT_OK(exit);
  EXPECT_FALSE(exit->timed_out()) << "Wait's deadline killed it, not Kill()";
  EXPECT_EQ(exit->end, ChildEnd::kSignaled);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->transcript, "sleeping");
  EXPECT_EQ(exit->Describe(), "pid " + std::to_string(exit->pid) + " was killed by signal 9 (Killed)");
}

TEST(ProcessTest, WaitForTranscriptFailsWhenTheChildEndsWithoutReportingIt) {
  auto child = ChildProcess::Fork([] {
    ReportToParent("something else");
    return 0;
  });
  FL_ASSERT_OK(child);
  Status status = child->WaitForTranscript("sleeping", milliseconds(20000));
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "child pid " + std::to_string(child->pid()) +
                                  " closed its report pipe without reporting 'sleeping'; its transcript so far: "
                                  "'something else'");
}

TEST(ProcessTest, WaitPastDeadlineKillsTheChild) {
  auto child = ChildProcess::Fork([] {
    for (;;) pause();
    return 0;
  });
  FL_ASSERT_OK(child);
  pid_t pid = child->pid();
  auto exit = child->Wait(milliseconds(50));
  FL_ASSERT_OK(exit);
  EXPECT_TRUE(exit->timed_out());
  EXPECT_FALSE(Unreaped(pid));
}

TEST(ProcessTest, DestroyingARunningChildKillsAndReapsIt) {
  pid_t pid = 0;
  {
    auto child = ChildProcess::Fork([] {
      for (;;) pause();
      return 0;
    });
    FL_ASSERT_OK(child);
    pid = child->pid();
    EXPECT_TRUE(Unreaped(pid));
  }
  EXPECT_FALSE(Unreaped(pid));  // reaped: not even a zombie
}

int ReportLeaked(const std::vector<std::string>&) {
  ReportToParent("leaked");
  return 0;
}
FL_REGISTER_CHILD("report_leaked", ReportLeaked);

// A process started by hand with a garbage FAULTLINE_REPORT_FD has no
// report channel (atoi read "abc" as 0 and wrote the report to stdin). The
// variable is read once, when the process starts: the child execs this
// binary with it set.
TEST(ProcessTest, AGarbageReportDescriptorMeansNoReportChannel) {
  int stdin_pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, stdin_pair), 0);
  std::string flag = std::string(kChildFlag) + "report_leaked";
  const pid_t pid = fork();  // a plain fork and exec: no ChildProcess sets the variable
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(stdin_pair[1], 0);
    setenv("FAULTLINE_REPORT_FD", "abc", 1);
    char* argv[] = {const_cast<char*>("/proc/self/exe"), flag.data(), nullptr};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(stdin_pair[1]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  char buffer[16];
  EXPECT_EQ(read(stdin_pair[0], buffer, sizeof(buffer)), 0);  // end of file: nothing was written
  close(stdin_pair[0]);
}

// "N TARGET" for each descriptor of this process (/proc/self/fd), one a
// line, and whether the spawn variables are set.
std::string DescribeDescriptors() {
  std::string text;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return "cannot list /proc/self/fd\n";
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == dirfd(dir)) continue;
    char target[512];
    const ssize_t n = readlink((std::string("/proc/self/fd/") + entry->d_name).c_str(), target, sizeof(target) - 1);
    text += std::string(entry->d_name) + " " + std::string(target, n > 0 ? static_cast<size_t>(n) : 0) + "\n";
  }
  closedir(dir);
  for (const char* name : {"FAULTLINE_REPORT_FD", "FAULTLINE_KEPT_FDS"}) {
    text += std::string("env ") + name + (std::getenv(name) != nullptr ? " set" : " unset") + "\n";
  }
  return text;
}

int PrintDescriptors(const std::vector<std::string>&) {
  const std::string text = DescribeDescriptors();
  return WriteAll(1, text).ok() ? 0 : 1;
}
FL_REGISTER_CHILD("print_descriptors", PrintDescriptors);

// A spawned child that execs a grandchild (as a repro variant starts its
// own workers), by plain fork and exec; reports its own descriptors, then
// "--\n", then the grandchild's.
int ExecGrandchild(const std::vector<std::string>&) {
  const std::string own = DescribeDescriptors();
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return 10;
  std::string flag = std::string(kChildFlag) + "print_descriptors";
  const pid_t pid = fork();
  if (pid < 0) return 11;
  if (pid == 0) {
    dup2(out[1], 1);
    char* argv[] = {const_cast<char*>("/proc/self/exe"), flag.data(), nullptr};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(out[1]);
  Result<std::string> grandchild = ReadToEnd(out[0]);
  close(out[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !grandchild.ok()) return 12;
  ReportToParent(own + "--\n" + *grandchild);
  return 0;
}
FL_REGISTER_CHILD("exec_grandchild", ExecGrandchild);

// The lines of `text` ("N TARGET" and "env ..." lines).
std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

// The report pipe and the kept descriptors of a spawned child, and its
// FAULTLINE_REPORT_FD and FAULTLINE_KEPT_FDS, do not reach what it execs:
// a grandchild of the same binary took the variable for its own channel
// and wrote into this test's transcript, and held the pipes open.
TEST(ProcessTest, WhatASpawnedChildExecsInheritsNeitherItsReportPipeNorItsKeptDescriptors) {
  const std::set<std::string> before = Lines(DescribeDescriptors());  // this test's own descriptors
  int kept[2];
  ASSERT_EQ(pipe2(kept, O_CLOEXEC), 0);
  char target[512];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(kept[1])).c_str(), target, sizeof(target) - 1);
  ASSERT_GT(n, 0);
  const std::string kept_line = std::to_string(kept[1]) + " " + std::string(target, static_cast<size_t>(n));
  SpawnOptions options;
  options.keep_fds = {kept[1]};
  auto child = ChildProcess::Spawn("exec_grandchild", {}, options);
  close(kept[1]);
  FL_ASSERT_OK(child);
  auto exit = child->Wait(milliseconds(60000));
  close(kept[0]);
  FL_ASSERT_OK(exit);
  ASSERT_TRUE(exit->succeeded()) << exit->Describe() << " (10-12: see ExecGrandchild); " << exit->transcript;
  const size_t split = exit->transcript.find("--\n");
  ASSERT_NE(split, std::string::npos) << exit->transcript;
  const std::set<std::string> in_child = Lines(exit->transcript.substr(0, split));
  const std::set<std::string> in_grandchild = Lines(exit->transcript.substr(split + 3));
  // What the child got from this spawn, not from this test: its report
  // pipe and the kept descriptor, at least.
  std::vector<std::string> handed;
  for (const std::string& line : in_child) {
    if (line.rfind("env ", 0) != 0 && before.count(line) == 0) handed.push_back(line);
  }
  EXPECT_GE(handed.size(), 2u) << exit->transcript;
  EXPECT_EQ(in_child.count(kept_line), 1u) << "the kept descriptor did not reach the child: " << exit->transcript;
  for (const std::string& line : handed) {
    EXPECT_EQ(in_grandchild.count(line), 0u) << "the grandchild inherited the child's " << line << "\n"
                                             << exit->transcript;
  }
  for (const char* name : {"FAULTLINE_REPORT_FD", "FAULTLINE_KEPT_FDS"}) {
    EXPECT_EQ(in_child.count(std::string("env ") + name + " unset"), 1u) << exit->transcript;
    EXPECT_EQ(in_grandchild.count(std::string("env ") + name + " unset"), 1u) << exit->transcript;
  }
}

// With SIGCHLD ignored the kernel reaps a child as it ends, so waitpid
// answers ECHILD: the child has ended, with an unknown status, and is not
// running() any more (Kill sends nothing to a pid that may be reused).
// Run in a plain forked process, which reports by its exit code: the
// disposition must not reach this test.
TEST(ProcessTest, AChildReapedElsewhereHasEndedWithAnUnknownStatus) {
  const pid_t tester = fork();
  ASSERT_GE(tester, 0);
  if (tester == 0) {
    signal(SIGCHLD, SIG_IGN);
    auto child = ChildProcess::Fork([] { return 5; });
    if (!child.ok()) _exit(10);
    auto exit = child->Wait(milliseconds(20000));
    if (!exit.ok()) _exit(11);  // before: "waitpid failed: No child processes"
    if (exit->end != ChildEnd::kReapedElsewhere || exit->signal != 0 || exit->exit_code != 0) _exit(12);
    if (exit->Describe() !=
        "pid " + std::to_string(child->pid()) + " ended; its exit status was reaped elsewhere (waitpid: ECHILD)") {
      _exit(13);
    }
    if (child->running()) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(tester, &status, 0), tester);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "status " << status << " (10-14: see the test's checks in order)";
}

TEST(ProcessTest, ParseStartMethodNamesTheBadValue) {
  EXPECT_EQ(*ParseStartMethod("fork"), StartMethod::kFork);
  EXPECT_EQ(*ParseStartMethod("spawn"), StartMethod::kSpawn);
  auto bad = ParseStartMethod("forkserver");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--start-method is 'forkserver'; expected fork or spawn");
}

}  // namespace
}  // namespace faultline
