// Provides the wire protocol between the data loader and its worker
// processes. The parent writes tasks (one int64 minibatch index each) to a
// worker's task socket; the worker writes each result to shared memory and
// answers on its result socket with a frame: {batch, message length} as two
// int64, then the message: empty on success, else the worker's error as
// JSON (StatusToJson plus "step"). These functions are the two ends of it;
// properties/fuzz/wire_fuzz.cc feeds the parent's end arbitrary bytes,
// split arbitrarily.
#ifndef FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_
#define FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace faultline {
namespace wire {

// The largest message an answer may carry.
inline constexpr int64_t kMaxAnswerBytes = int64_t{1} << 24;

// One answer of a worker: the minibatch and its error text (empty: success).
struct Answer {
  int64_t batch = 0;
  std::string message;
};

// Writes all n bytes to a socket; a dead peer is an Unavailable error (EPIPE),
// never a SIGPIPE.
Status WriteAll(int fd, const void* data, size_t n);

// Reads exactly n bytes, waiting for them; returns false at end of file.
// (The worker's end: it waits for its parent's tasks.)
Result<bool> ReadAll(int fd, void* data, size_t n);

// Writes one answer frame; returns false when the connection failed.
bool WriteAnswer(int fd, int64_t batch, const std::string& message);

// Assembles the answer frames of one worker's result socket as their bytes
// arrive, however the stream splits them. The parent never waits in
// read(2) for the rest of a frame: a worker that stops mid-frame leaves
// the part here, and the loader's timeout still applies to it.
class AnswerReader {
 public:
  enum class Connection { kOpen, kClosed };

  // Appends each whole frame of the bytes received so far plus `bytes` to
  // `answers`, and keeps a partial one for the next call. A frame whose
  // length is negative or above kMaxAnswerBytes is an Internal error that
  // gives its header; the frames before it are appended, nothing after it
  // is read (and every later call returns the same error).
  Status Feed(std::string_view bytes, std::deque<Answer>* answers);

  // Feeds what `fd` (a socket) holds now, up to `max_bytes`, without
  // waiting for more: a worker that writes without end cannot keep the
  // caller from its timeout and exit checks. Returns kClosed, with
  // `transport` saying why, at end of file or when the connection broke;
  // else kOpen (more may be there already).
  static constexpr size_t kMaxReadPerCall = size_t{4} << 20;
  Result<Connection> ReadAvailable(int fd, std::deque<Answer>* answers, std::string* transport,
                                   size_t max_bytes = kMaxReadPerCall);

  // The frame received in part: "" between frames, else e.g. "8 of the 16
  // bytes of an answer's header" or "20 of the 316 bytes of its answer
  // for minibatch 5".
  std::string Partial() const;
  // How many bytes of that frame were received (0 between frames).
  size_t PartialBytes() const { return pending_.size(); }

 private:
  std::string pending_;  // the bytes of frames not yet whole
  Status broken_;        // the malformed header, once one arrived
};

// A worker's error on the wire: the status with its CUDA detail, and the step.
std::string ErrorToWire(const Status& status, const std::string& step);

// Rebuilds the error a worker sent and stores its step in `step` (empty when
// absent). Unreadable input is an Internal error, never an exception and
// never an OK status.
Status ErrorFromWire(const std::string& wire, std::string* step);

}  // namespace wire
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_
