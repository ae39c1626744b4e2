// Provides the wire protocol between the data loader and its worker
// processes. The parent writes tasks (one int64 minibatch index each) to a
// worker's task socket; the worker writes each result to shared memory and
// answers on its result socket with a frame: {batch, message length} as two
// int64, then the message: empty on success, else the worker's error as
// JSON (StatusToJson plus "step"). These functions are the two ends of it;
// properties/fuzz/wire_fuzz.cc feeds the parent's end arbitrary bytes.
#ifndef FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_
#define FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

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

// Reads exactly n bytes; returns false at end of file.
Result<bool> ReadAll(int fd, void* data, size_t n);

// Writes one answer frame; returns false when the connection failed.
bool WriteAnswer(int fd, int64_t batch, const std::string& message);

// Reads one answer frame from a worker's result socket. Returns
// std::nullopt, with `transport` saying why, when the connection closed or
// broke before a whole answer arrived; a frame whose length is negative or
// above kMaxAnswerBytes is an Internal error that gives the header (the
// caller names the worker).
Result<std::optional<Answer>> ReadAnswer(int fd, std::string* transport);

// A worker's error on the wire: the status with its CUDA detail, and the step.
std::string ErrorToWire(const Status& status, const std::string& step);

// Rebuilds the error a worker sent and stores its step in `step` (empty when
// absent). Unreadable input is an Internal error, never an exception and
// never an OK status.
Status ErrorFromWire(const std::string& wire, std::string* step);

}  // namespace wire
}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_WIRE_PROTOCOL_H_
