#include "reference/base/fd_io.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

// The read end of a pipe that holds `text` and whose write end is closed
// (-1 when no pipe can be made: the test fails there).
int ReadEndHolding(std::string_view text) {
  int fds[2];
  if (pipe(fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return -1;
  }
  FL_EXPECT_OK(WriteAll(fds[1], text));  // a pipe takes 64 KiB before a reader must drain it
  close(fds[1]);
  return fds[0];
}

TEST(FdIoTest, RoundTripThroughAPipe) {
  const int read_end = ReadEndHolding("hello, pipe");
  char buffer[11];
  FL_ASSERT_OK(ReadAll(read_end, buffer, sizeof(buffer)));
  EXPECT_EQ(std::string(buffer, sizeof(buffer)), "hello, pipe");
  EXPECT_THAT(ReadAll(read_end, buffer, 1), StatusIs(StatusCode::kOutOfRange, "end of file after 0 of 1 bytes"));
  close(read_end);
}

TEST(FdIoTest, ReadToEndTakesEverythingUntilTheWriterCloses) {
  const std::string text(10000, 'x');  // more than one read's buffer
  const int read_end = ReadEndHolding(text + "end");
  Result<std::string> all = ReadToEnd(read_end);
  FL_ASSERT_OK(all.status());
  EXPECT_EQ(*all, text + "end");
  close(read_end);
  EXPECT_THAT(ReadToEnd(read_end).status(), StatusIs(StatusCode::kUnavailable, "read failed: Bad file descriptor"));
}

TEST(FdIoTest, EndOfFileMidwaySaysHowFarItGot) {
  const int read_end = ReadEndHolding("abc");
  char buffer[8];
  EXPECT_THAT(ReadAll(read_end, buffer, sizeof(buffer)),
              StatusIs(StatusCode::kOutOfRange, "end of file after 3 of 8 bytes"));
  close(read_end);
}

TEST(FdIoTest, WritesARegularFileWhole) {
  const char* tmpdir = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/fd_io_test.XXXXXX";
  const int fd = mkstemp(pattern.data());
  ASSERT_GE(fd, 0);
  const std::string data(3 << 20, 'x');  // more than one write may take
  FL_ASSERT_OK(WriteAll(fd, data));
  ASSERT_EQ(lseek(fd, 0, SEEK_SET), 0);
  std::string back(data.size(), '\0');
  FL_ASSERT_OK(ReadAll(fd, back.data(), back.size()));
  EXPECT_EQ(back, data);
  close(fd);
  unlink(pattern.c_str());
}

TEST(FdIoTest, AClosedSocketPeerIsAnErrorNotASignal) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  close(fds[1]);
  // Without MSG_NOSIGNAL this would kill the test with SIGPIPE.
  EXPECT_THAT(WriteAll(fds[0], "x"), StatusIs(StatusCode::kUnavailable, "write failed: Broken pipe"));
  close(fds[0]);
}

TEST(FdIoTest, ABadDescriptorNamesTheError) {
  char byte = 0;
  EXPECT_THAT(WriteAll(-1, &byte, 1), StatusIs(StatusCode::kUnavailable, "write failed: Bad file descriptor"));
  EXPECT_THAT(ReadAll(-1, &byte, 1), StatusIs(StatusCode::kUnavailable, "read failed: Bad file descriptor"));
}

TEST(FdIoTest, NothingToTransferIsOk) {
  FL_ASSERT_OK(WriteAll(-1, nullptr, 0));
  FL_ASSERT_OK(ReadAll(-1, nullptr, 0));
}

}  // namespace
}  // namespace faultline
