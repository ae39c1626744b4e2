// Checks the reusable shared-memory segments: a reader sees exactly the last
// message (never the tail of a longer earlier one), follows the writer when
// the segment grows, unlinks the name once it has opened it, and a corrupt
// or missing segment is an error that names it.
#include "reference/loader/shared_memory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace faultline {
namespace {

// A name no other run uses (Bazel's sandboxes share /dev/shm and each has
// its own pid 12).
std::string TestSegmentName(const std::string& what) { return ProcessSegmentPrefix("shm-test-") + what; }

// Returns the reader's current message, or "error: " and the status text.
std::string Message(SegmentReader& reader) {
  std::string out;
  Status status = reader.Read([&](std::string_view bytes) {
    out.assign(bytes);
    return OkStatus();
  });
  return status.ok() ? out : "error: " + status.ToString();
}

TEST(SharedMemoryTest, TheReaderSeesExactlyTheLastMessageAsTheSegmentGrowsAndIsReused) {
  const std::string name = TestSegmentName("reuse");
  SegmentWriter writer(name);
  SegmentReader reader(name);
  const std::string small = "minibatch 0";
  const std::string large(3 * 1024 * 1024 + 5, 'x');  // forces the segment to grow past its first pages
  ASSERT_TRUE(writer.Write(small).ok());
  EXPECT_EQ(Message(reader), small);
  ASSERT_TRUE(writer.Write(large).ok());
  EXPECT_EQ(Message(reader), large);
  ASSERT_TRUE(writer.Write("").ok());
  EXPECT_EQ(Message(reader), "");
  ASSERT_TRUE(writer.Write(small).ok());
  EXPECT_EQ(Message(reader), small);
}

// A streamed message grows the segment while it is written: the pieces
// written before a growth stay, At() reaches them after it, and until
// Finish a reader sees an empty message rather than a part of this one.
TEST(SharedMemoryTest, AStreamedMessageKeepsItsPiecesAcrossGrowthAndAppearsOnlyWhenFinished) {
  const std::string name = TestSegmentName("stream");
  SegmentWriter writer(name);
  SegmentReader reader(name);
  ASSERT_TRUE(writer.Write("an earlier message").ok());
  ASSERT_TRUE(writer.Begin().ok());
  std::string expected;
  for (int piece = 0; piece < 40; ++piece) {
    const std::string bytes(64 * 1024 + piece, static_cast<char>('a' + piece % 26));  // 2.6 MB: several growths
    Result<char*> out = writer.Extend(bytes.size());
    ASSERT_TRUE(out.ok()) << out.status();
    std::memcpy(*out, bytes.data(), bytes.size());
    expected += bytes;
    if (piece == 20) {
      EXPECT_EQ(Message(reader), "");
    }
  }
  ASSERT_EQ(writer.size(), expected.size());
  *writer.At(3) = 'Z';  // a field filled in after later pieces
  expected[3] = 'Z';
  writer.Finish();
  EXPECT_EQ(Message(reader), expected);
}

// Room reserved up front takes a streamed message without moving the
// mapping, and a growth leaves a quarter more room than the message needed:
// both spare the writer and the reader a remap of the whole segment.
TEST(SharedMemoryTest, ReservedRoomTakesAMessageInPlaceAndAGrowthLeavesAQuarterMore) {
  SegmentWriter reserved(TestSegmentName("reserved"));
  ASSERT_TRUE(reserved.Reserve(1 << 20).ok());
  const size_t room = reserved.reserved();
  EXPECT_GE(room, 1u << 20);
  ASSERT_TRUE(reserved.Begin().ok());
  Result<char*> first = reserved.Extend(4096);
  ASSERT_TRUE(first.ok()) << first.status();
  for (int piece = 1; piece < 256; ++piece) ASSERT_TRUE(reserved.Extend(4096).ok());
  EXPECT_EQ(reserved.reserved(), room);  // 1 MiB in 256 pieces, never grown
  EXPECT_EQ(reserved.At(0), *first);
  UnlinkSharedMemory(TestSegmentName("reserved"));

  SegmentWriter grown(TestSegmentName("grown"));
  ASSERT_TRUE(grown.Begin().ok());
  ASSERT_TRUE(grown.Extend(100000).ok());
  EXPECT_GE(grown.reserved(), 125000u);
  UnlinkSharedMemory(TestSegmentName("grown"));
}

// Sizes whose sum or quarter more wrap around size_t are refused as sizes
// the segment cannot hold, not served from a smaller mapping.
TEST(SharedMemoryTest, ASizePastWhatASegmentCanHoldIsRefused) {
  const std::string name = TestSegmentName("huge");
  SegmentWriter writer(name);
  ASSERT_TRUE(writer.Begin().ok());
  ASSERT_TRUE(writer.Extend(100).ok());
  for (size_t n : {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 4 * 3}) {
    Result<char*> out = writer.Extend(n);
    ASSERT_FALSE(out.ok()) << n;
    EXPECT_NE(out.status().message().find("reserving"), std::string::npos) << out.status();
  }
  EXPECT_FALSE(writer.Reserve(SIZE_MAX).ok());
  UnlinkSharedMemory(name);
}

TEST(SharedMemoryTest, TheNameIsGoneOnceTheReaderOpenedItAndTheSegmentStillWorks) {
  const std::string name = TestSegmentName("unlink");
  SegmentWriter writer(name);
  ASSERT_TRUE(writer.Write("first").ok());
  EXPECT_TRUE(SharedMemoryExists(name));
  SegmentReader reader(name);
  EXPECT_EQ(Message(reader), "first");
  EXPECT_FALSE(SharedMemoryExists(name));
  ASSERT_TRUE(writer.Write(std::string(2 * 1024 * 1024, 'y')).ok());  // grows after the unlink
  EXPECT_EQ(Message(reader).size(), 2u * 1024 * 1024);
}

TEST(SharedMemoryTest, ASecondWriterForTheSameNameIsRefused) {
  const std::string name = TestSegmentName("twice");
  SegmentWriter first(name);
  ASSERT_TRUE(first.Write("a").ok());
  SegmentWriter second(name);
  Status status = second.Write("b");
  EXPECT_EQ(status.message(), "shm_open of shared memory segment " + name + " failed: File exists");
  UnlinkSharedMemory(name);
}

TEST(SharedMemoryTest, AMissingSegmentIsNamed) {
  const std::string name = TestSegmentName("missing");
  SegmentReader reader(name);
  EXPECT_EQ(Message(reader), "error: " + UnavailableError("shm_open of shared memory segment " + name +
                                                          " failed: No such file or directory")
                                             .ToString());
}

TEST(SharedMemoryTest, ALengthFieldBeyondTheSegmentIsDataLoss) {
  const std::string name = TestSegmentName("corrupt");
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  const uint64_t length = 1 << 20;  // says 1 MiB follows; the segment holds 4 KiB
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(pwrite(fd, &length, sizeof(length), 0), static_cast<ssize_t>(sizeof(length)));
  close(fd);
  SegmentReader reader(name);
  EXPECT_EQ(Message(reader), "error: " + DataLossError("shared memory segment " + name +
                                                        " holds 4096 bytes; its length field says 1048576 bytes "
                                                        "follow the 8-byte field")
                                             .ToString());
  EXPECT_FALSE(SharedMemoryExists(name));
}

TEST(SharedMemoryTest, ASegmentTooShortForItsLengthFieldIsDataLoss) {
  const std::string name = TestSegmentName("short");
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 3), 0);
  close(fd);
  SegmentReader reader(name);
  EXPECT_EQ(Message(reader), "error: " + DataLossError("shared memory segment " + name +
                                                        " holds 3 bytes; expected at least its 8-byte length field")
                                             .ToString());
}

// A loader's segment never has a name in /dev/shm: it is a memfd (its
// name only labels it), close-on-exec, that a writer and a reader share
// through the descriptor. Before, shm_open created the name and shm_unlink
// removed it a moment later; a process killed in between left it for good.
TEST(SharedMemoryTest, AnUnlinkedSegmentNeverHasANameAndIsCloseOnExec) {
  const std::string name = TestSegmentName("unnamed");
  Result<int> fd = CreateUnlinkedSegment(name);
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_FALSE(SharedMemoryExists(name));
  char target[512];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(*fd)).c_str(), target, sizeof(target) - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(target, static_cast<size_t>(n)), "/memfd:" + name.substr(1) + " (deleted)");
  EXPECT_NE(fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  const int reader_fd = dup(*fd);
  ASSERT_GE(reader_fd, 0);
  SegmentWriter writer(name, *fd);
  SegmentReader reader(name, reader_fd);
  ASSERT_TRUE(writer.Write("through the descriptor").ok());
  EXPECT_EQ(Message(reader), "through the descriptor");
}

}  // namespace
}  // namespace faultline
