// Tests what the fuzz target cannot: AnswerReader::ReadAvailable returns to
// its caller after max_bytes even while more is waiting, so that a worker
// that writes without end cannot keep the loader from its timeout and exit
// checks.
#include "reference/loader/wire_protocol.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

TEST(AnswerReaderTest, ReadAvailableStopsAtMaxBytesWhileMoreIsWaiting) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  // 4096 empty answers (16-byte frames, 64 KiB) waiting in the socket, sent
  // at once (one small send each would fill the socket's buffer sooner).
  const int64_t sent = 4096;
  std::vector<int64_t> frames;
  for (int64_t batch = 0; batch < sent; ++batch) frames.insert(frames.end(), {batch, 0});
  FL_ASSERT_OK(wire::WriteAll(fds[1], frames.data(), frames.size() * sizeof(int64_t)));
  wire::AnswerReader reader;
  std::deque<wire::Answer> answers;
  std::string transport;
  Result<wire::AnswerReader::Connection> read = reader.ReadAvailable(fds[0], &answers, &transport, 16 * 1000);
  FL_ASSERT_OK(read);
  EXPECT_EQ(*read, wire::AnswerReader::Connection::kOpen);
  EXPECT_EQ(answers.size(), 1000u);
  EXPECT_EQ(reader.Partial(), "");
  // The next calls take the rest, in order.
  while (answers.size() < static_cast<size_t>(sent)) {
    FL_ASSERT_OK(reader.ReadAvailable(fds[0], &answers, &transport));
  }
  for (size_t i = 0; i < answers.size(); ++i) ASSERT_EQ(answers[i].batch, static_cast<int64_t>(i));
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace faultline
