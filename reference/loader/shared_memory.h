// Provides shared-memory segments for passing bytes between processes,
// reused for message after message: a producer writes a segment
// (SegmentWriter) and a consumer reads the bytes where they lie
// (SegmentReader), each through its own descriptor of a segment made by
// CreateUnlinkedSegment. Both keep their mapping, so after the first
// message no pages are allocated, zeroed, mapped or freed: a minibatch of
// ~30 MB in a fresh segment each time cost more than copying it.
#ifndef FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_
#define FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "reference/base/status.h"
#include "reference/base/unique_fd.h"

namespace faultline {

// The producer's end of a segment. The segment holds an 8-byte length,
// then the message; it grows when a message does not fit and never shrinks.
class SegmentWriter {
 public:
  // Writes the segment `fd` (from CreateUnlinkedSegment, or a descriptor
  // inherited from it; the writer closes it), called `name` in messages.
  SegmentWriter(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~SegmentWriter();
  SegmentWriter(const SegmentWriter&) = delete;
  SegmentWriter& operator=(const SegmentWriter&) = delete;

  // Replaces the segment's message with a copy of `bytes`. The reader must
  // not be reading meanwhile: the caller's protocol orders the two.
  Status Write(std::string_view bytes);

  // Streams a message whose size is not known up front: Begin, then Extend
  // for each piece, then Finish. Until Finish the segment's length field is
  // 0, so a reader ordered after Begin (the caller's protocol orders them)
  // sees an empty message, never a part of this one.
  Status Begin();
  // Makes room for a message of `size` bytes in all (a hint: Extend still
  // grows past it), so that a streamed message does not grow the segment
  // piece by piece.
  Status Reserve(size_t size);
  // Appends `n` bytes to the message, growing the segment when they do not
  // fit, and returns where they go for the caller to fill. The pointer, and
  // every earlier one, is valid until the next Extend (growing may move the
  // mapping): keep offsets, and use At() to come back.
  Result<char*> Extend(size_t n);
  // The message's byte at `offset` (below its size so far).
  char* At(size_t offset);
  // The size of the message so far.
  size_t size() const { return size_; }
  // The largest message the segment holds without growing.
  size_t reserved() const;
  // Publishes the message: writes its length.
  void Finish();

 private:
  Status Hold(size_t bytes);

  std::string name_;
  UniqueFd fd_;
  char* map_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;  // of the message being written
};

// The consumer's end of a segment. Its mappings, and so the bytes of the
// messages it hands out, are not inherited by a process forked afterwards
// (MADV_DONTFORK).
class SegmentReader {
 public:
  // Reads the segment `fd` (from CreateUnlinkedSegment, or a descriptor
  // inherited from it; the reader closes it), called `name` in messages.
  SegmentReader(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  SegmentReader(const SegmentReader&) = delete;
  SegmentReader& operator=(const SegmentReader&) = delete;

  // The last message written, where it lies, and the mapping it lies in.
  struct Message {
    std::string_view bytes;  // no copy, 8-byte aligned
    // Keeps `bytes` mapped for as long as it is held, past a later Map that
    // remaps a segment the writer grew, and past the reader's end.
    std::shared_ptr<const void> mapping;
  };
  // Returns the last message written, or DataLoss when the length in the
  // segment exceeds what it holds.
  Result<Message> Map();
  // Calls `read` on the bytes Map returns; the view is valid only during
  // the call. Returns `read`'s status, or Map's error.
  Status Read(const std::function<Status(std::string_view)>& read);
  // The segment's descriptor.
  int fd() const { return fd_.get(); }

 private:
  struct Mapping;  // an mmap of the segment, unmapped when the last holder drops it

  std::string name_;
  UniqueFd fd_;
  std::shared_ptr<const Mapping> mapping_;
};

// Creates an empty segment (memfd_create; `name` labels it,
// "/memfd:NAME (deleted)" in /proc/PID/fd and /proc/PID/maps, and in
// messages): returns its descriptor (close-on-exec), which other processes
// get by inheriting it (fork, or spawn's kept descriptors). Not shm_open:
// a name in /dev/shm outlived a process killed before it was unlinked, and
// /dev/shm's size (64 MB in a default Docker container) bounded the
// segments. A memfd lives as long as a descriptor or a mapping holds it,
// and only the memory bounds it.
Result<int> CreateUnlinkedSegment(const std::string& name);

// Returns "/faultline-<tag><pid>-<nonce>-", the start of segment names
// that tell this process's segments apart in /proc (leak checks look for
// it): the random nonce (one per process) keeps apart processes with the
// same pid in different pid namespaces, such as Bazel's test sandboxes.
std::string ProcessSegmentPrefix(const std::string& tag = "");

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_SHARED_MEMORY_H_
