// Checks the reusable shared-memory segments: a reader sees exactly the last
// message (never the tail of a longer earlier one), follows the writer when
// the segment grows, a corrupt segment is an error that names it, and
// nothing holds a segment once its ends and the messages read are gone.
#include "reference/loader/shared_memory.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

// A name of this test's own, so that the /proc checks below see only its
// segment.
std::string TestSegmentName(const std::string& what) { return ProcessSegmentPrefix("shm-test-") + what; }

// Creates segment `name`, or fails the test and returns -1 (on which every
// call of a writer or reader then fails). Pass it to a SegmentReader, and
// dup(reader.fd()) to the SegmentWriter: each end its own descriptor, as
// the main process and a worker hold theirs.
int NewSegment(const std::string& name) {
  Result<int> fd = CreateUnlinkedSegment(name);
  FL_EXPECT_OK(fd);
  return fd.ok() ? *fd : -1;
}

// What of this process holds segment `name`: its descriptors and its
// mappings, as /proc/self/fd and /proc/self/maps show a memfd.
struct Holders {
  int descriptors = 0;
  int mappings = 0;
};
Holders HoldersOf(const std::string& name) {
  const std::string memfd = "/memfd:" + name.substr(1) + " (deleted)";
  Holders holders;
  DIR* dir = opendir("/proc/self/fd");
  EXPECT_TRUE(dir != nullptr) << "cannot list /proc/self/fd";
  if (dir != nullptr) {
    while (dirent* e = readdir(dir)) {
      char target[512];
      const ssize_t n = readlink(("/proc/self/fd/" + std::string(e->d_name)).c_str(), target, sizeof(target) - 1);
      if (n > 0 && std::string(target, static_cast<size_t>(n)) == memfd) ++holders.descriptors;
    }
    closedir(dir);
  }
  std::ifstream maps("/proc/self/maps");
  EXPECT_TRUE(maps.is_open()) << "cannot read /proc/self/maps";
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= memfd.size() && line.compare(line.size() - memfd.size(), memfd.size(), memfd) == 0) {
      ++holders.mappings;
    }
  }
  return holders;
}

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
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter writer(name, dup(reader.fd()));
  const std::string small = "minibatch 0";
  const std::string large(3 * 1024 * 1024 + 5, 'x');  // forces the segment to grow past its first pages
  FL_ASSERT_OK(writer.Write(small));
  EXPECT_EQ(Message(reader), small);
  FL_ASSERT_OK(writer.Write(large));
  EXPECT_EQ(Message(reader), large);
  FL_ASSERT_OK(writer.Write(""));
  EXPECT_EQ(Message(reader), "");
  FL_ASSERT_OK(writer.Write(small));
  EXPECT_EQ(Message(reader), small);
}

// A streamed message grows the segment while it is written: the pieces
// written before a growth stay, At() reaches them after it, and until
// Finish a reader sees an empty message rather than a part of this one.
TEST(SharedMemoryTest, AStreamedMessageKeepsItsPiecesAcrossGrowthAndAppearsOnlyWhenFinished) {
  const std::string name = TestSegmentName("stream");
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter writer(name, dup(reader.fd()));
  FL_ASSERT_OK(writer.Write("an earlier message"));
  FL_ASSERT_OK(writer.Begin());
  std::string expected;
  for (int piece = 0; piece < 40; ++piece) {
    const std::string bytes(64 * 1024 + piece, static_cast<char>('a' + piece % 26));  // 2.6 MB: several growths
    Result<char*> out = writer.Extend(bytes.size());
    FL_ASSERT_OK(out);
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
  const std::string reserved_name = TestSegmentName("reserved");
  SegmentWriter reserved(reserved_name, NewSegment(reserved_name));
  FL_ASSERT_OK(reserved.Reserve(1 << 20));
  const size_t room = reserved.reserved();
  EXPECT_GE(room, 1u << 20);
  FL_ASSERT_OK(reserved.Begin());
  Result<char*> first = reserved.Extend(4096);
  FL_ASSERT_OK(first);
  for (int piece = 1; piece < 256; ++piece) FL_ASSERT_OK(reserved.Extend(4096));
  EXPECT_EQ(reserved.reserved(), room);  // 1 MiB in 256 pieces, never grown
  EXPECT_EQ(reserved.At(0), *first);

  const std::string grown_name = TestSegmentName("grown");
  SegmentWriter grown(grown_name, NewSegment(grown_name));
  FL_ASSERT_OK(grown.Begin());
  FL_ASSERT_OK(grown.Extend(100000));
  EXPECT_GE(grown.reserved(), 125000u);
}

// Sizes whose sum or quarter more wrap around size_t are refused as sizes
// the segment cannot hold, not served from a smaller mapping.
TEST(SharedMemoryTest, ASizePastWhatASegmentCanHoldIsRefused) {
  const std::string name = TestSegmentName("huge");
  SegmentWriter writer(name, NewSegment(name));
  FL_ASSERT_OK(writer.Begin());
  FL_ASSERT_OK(writer.Extend(100));
  for (size_t n : {SIZE_MAX, SIZE_MAX - 100, SIZE_MAX / 4 * 3}) {
    Result<char*> out = writer.Extend(n);
    ASSERT_FALSE(out.ok()) << n;
    EXPECT_NE(out.status().message().find("reserving"), std::string::npos) << out.status();
  }
  EXPECT_FALSE(writer.Reserve(SIZE_MAX).ok());
}

TEST(SharedMemoryTest, ALengthFieldBeyondTheSegmentIsDataLoss) {
  const std::string name = TestSegmentName("corrupt");
  SegmentReader reader(name, NewSegment(name));
  const uint64_t length = 1 << 20;  // says 1 MiB follows; the segment holds 4 KiB
  ASSERT_EQ(ftruncate(reader.fd(), 4096), 0);
  ASSERT_EQ(pwrite(reader.fd(), &length, sizeof(length), 0), static_cast<ssize_t>(sizeof(length)));
  EXPECT_EQ(Message(reader), "error: " + DataLossError("shared memory segment " + name +
                                                       " holds 4096 bytes; its length field says 1048576 bytes "
                                                       "follow the 8-byte field")
                                             .ToString());
}

TEST(SharedMemoryTest, ASegmentTooShortForItsLengthFieldIsDataLoss) {
  const std::string name = TestSegmentName("short");
  SegmentReader reader(name, NewSegment(name));
  ASSERT_EQ(ftruncate(reader.fd(), 3), 0);
  EXPECT_EQ(Message(reader), "error: " + DataLossError("shared memory segment " + name +
                                                       " holds 3 bytes; expected at least its 8-byte length field")
                                             .ToString());
}

// A segment is a memfd, labelled with its name in /proc, close-on-exec,
// that a writer and a reader share through their descriptors.
TEST(SharedMemoryTest, ASegmentIsALabelledMemfdAndIsCloseOnExec) {
  const std::string name = TestSegmentName("labelled");
  Result<int> fd = CreateUnlinkedSegment(name);
  FL_ASSERT_OK(fd);
  char target[512];
  const ssize_t n = readlink(("/proc/self/fd/" + std::to_string(*fd)).c_str(), target, sizeof(target) - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(target, static_cast<size_t>(n)), "/memfd:" + name.substr(1) + " (deleted)");
  EXPECT_NE(fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  const int reader_fd = dup(*fd);
  ASSERT_GE(reader_fd, 0);
  SegmentWriter writer(name, *fd);
  SegmentReader reader(name, reader_fd);
  FL_ASSERT_OK(writer.Write("through the descriptor"));
  EXPECT_EQ(Message(reader), "through the descriptor");
}

// A segment lives as long as a descriptor or a mapping holds it, and no
// longer: a message read stays mapped past both ends, and once it is gone
// too this process holds nothing of the segment. (A memfd has no name that
// could be left behind: this is what a leak of one is.)
TEST(SharedMemoryTest, NothingHoldsASegmentOnceItsEndsAndItsMessagesAreGone) {
  const std::string name = TestSegmentName("released");
  std::optional<SegmentReader::Message> held;
  {
    SegmentReader reader(name, NewSegment(name));
    SegmentWriter writer(name, dup(reader.fd()));
    FL_ASSERT_OK(writer.Write(std::string(1 << 20, 'r')));
    Result<SegmentReader::Message> message = reader.Map();
    FL_ASSERT_OK(message);
    held = *message;
    const Holders both = HoldersOf(name);
    EXPECT_EQ(both.descriptors, 2);
    EXPECT_EQ(both.mappings, 2);  // the writer's and the reader's
  }
  ASSERT_EQ(held->bytes.size(), 1u << 20);
  EXPECT_EQ(held->bytes.back(), 'r');
  const Holders message_only = HoldersOf(name);
  EXPECT_EQ(message_only.descriptors, 0);
  EXPECT_EQ(message_only.mappings, 1);
  held.reset();
  const Holders none = HoldersOf(name);
  EXPECT_EQ(none.descriptors, 0);
  EXPECT_EQ(none.mappings, 0);
}

}  // namespace
}  // namespace faultline
