// Fuzzes the parent's end of the data loader's worker wire protocol
// (reference/loader/wire_protocol.h). Feeds: the input as the bytes a worker
// wrote to its result socket (a stream of {batch, length} + message frames),
// assembled by an AnswerReader whole, in pieces of several sizes and from a
// socket; every non-empty message goes through ErrorFromWire (and so
// StatusFromJson). Then a round trip: an error built from the input's
// bytes, sent with ErrorToWire and WriteAnswer and received with
// ReadAvailable and ErrorFromWire. Asserts: nothing crashes or throws; the
// reader gives exactly the frames present, the same however the bytes are
// split, and ends with the frame left in part, a malformed-length error or
// (from the socket) the transport reason naming it; a worker's error is never
// an OK status; the round trip keeps the code, the CUDA detail, the step
// and (for valid UTF-8) the message.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>

#include "properties/fuzz/fuzz_support.h"
#include "reference/base/unique_fd.h"
#include "reference/loader/wire_protocol.h"

namespace faultline {
namespace {

constexpr size_t kMaxInput = 64 * 1024;  // fits in a socket buffer, so one thread can write then read

struct SocketPair {
  UniqueFd ends[2];
  SocketPair() {
    int fds[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, std::strerror(errno));
    ends[0].reset(fds[0]);
    ends[1].reset(fds[1]);
  }
  int fd(int end) const { return ends[end].get(); }
};

void CheckErrorFromWire(const std::string& message) {
  std::string step = "unset";
  Status status = wire::ErrorFromWire(message, &step);
  FUZZ_CHECK(!status.ok(), "a worker's error message became an OK status: " + message);
  FUZZ_CHECK(status.code() > StatusCode::kOk && status.code() <= StatusCode::kInternal, status.ToString());
  FUZZ_CHECK(!status.cuda_error() || status.code() == StatusCode::kDeviceError, status.ToString());
}

// What an AnswerReader made of a stream: its frames, the error that ended
// it (OK if none) and the frame left in part.
struct Received {
  std::deque<wire::Answer> answers;
  Status error;
  std::string partial;
};

// Feeds `bytes` in pieces of `piece` bytes (all at once when 0).
Received FeedInPieces(std::string_view bytes, size_t piece) {
  wire::AnswerReader reader;
  Received got;
  for (size_t at = 0; at < bytes.size() && got.error.ok();) {
    const size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
    got.error = reader.Feed(bytes.substr(at, n), &got.answers);
    at += n;
  }
  got.partial = reader.Partial();
  return got;
}

void ExpectSame(const Received& a, const Received& b, const std::string& how) {
  FUZZ_CHECK(a.answers.size() == b.answers.size(), how + ": another number of frames");
  for (size_t i = 0; i < a.answers.size(); ++i) {
    FUZZ_CHECK(a.answers[i].batch == b.answers[i].batch && a.answers[i].message == b.answers[i].message,
               how + ": frame " + std::to_string(i) + " differs");
  }
  FUZZ_CHECK(a.error.ok() == b.error.ok() && a.error.message() == b.error.message(), how + ": " + b.error.ToString());
  FUZZ_CHECK(a.error.ok() ? a.partial == b.partial : true, how + ": partial " + b.partial);
}

void ReadFrames(std::string_view bytes) {
  // The frames, walked by hand: the reader must give exactly these.
  const Received whole = FeedInPieces(bytes, 0);
  size_t consumed = 0;
  for (const wire::Answer& a : whole.answers) {
    FUZZ_CHECK(bytes.size() - consumed >= 16 + a.message.size(), "an answer longer than the input");
    int64_t header[2];
    std::memcpy(header, bytes.data() + consumed, 16);
    FUZZ_CHECK(header[0] == a.batch && header[1] == static_cast<int64_t>(a.message.size()), "header mismatch");
    FUZZ_CHECK(bytes.substr(consumed + 16, a.message.size()) == a.message, "message mismatch");
    consumed += 16 + a.message.size();
    if (!a.message.empty()) CheckErrorFromWire(a.message);
  }
  const size_t left = bytes.size() - consumed;
  if (!whole.error.ok()) {
    FUZZ_CHECK(whole.error.code() == StatusCode::kInternal, whole.error.ToString());
    FUZZ_CHECK(whole.error.message().rfind("a malformed answer header", 0) == 0, whole.error.ToString());
    FUZZ_CHECK(left >= 16, "malformed-length error without a whole header");
    int64_t length;
    std::memcpy(&length, bytes.data() + consumed + 8, 8);
    FUZZ_CHECK(length < 0 || length > wire::kMaxAnswerBytes, "a valid length was called malformed");
  } else {
    FUZZ_CHECK(whole.partial.empty() == (left == 0),
               "partial '" + whole.partial + "' with " + std::to_string(left) + " bytes left");
  }
  // However the stream splits the bytes, the same frames and the same end.
  for (size_t piece : {1, 7, 16, 17, 4096}) ExpectSame(whole, FeedInPieces(bytes, piece), std::to_string(piece));

  // From a socket whose writer closed: the same, and the end named.
  SocketPair sockets;
  FUZZ_CHECK(wire::WriteAll(sockets.fd(1), bytes.data(), bytes.size()).ok(), "write");
  shutdown(sockets.fd(1), SHUT_WR);
  wire::AnswerReader reader;
  Received read;
  std::string transport;
  for (;;) {
    Result<wire::AnswerReader::Connection> connection = reader.ReadAvailable(sockets.fd(0), &read.answers, &transport);
    if (!connection.ok()) {
      read.error = connection.status();
      break;
    }
    if (*connection == wire::AnswerReader::Connection::kClosed) break;
  }
  read.partial = reader.Partial();
  ExpectSame(whole, read, "socket");
  if (read.error.ok()) {
    FUZZ_CHECK(
        transport == (read.partial.empty() ? std::string("the result connection closed")
                                           : "the result connection closed mid-answer (after " + read.partial + ")"),
        transport);
  }
}

// Builds an error from the input: byte 0 picks the code (and whether it is
// a CUDA error), the rest is split at '\0' into message, step and the CUDA
// name, string, API and file; bytes 1..8 give the CUDA code and line.
void RoundTrip(std::string_view bytes) {
  if (bytes.size() < 9) return;
  const uint8_t selector = static_cast<uint8_t>(bytes[0]);
  int32_t numbers[2];
  std::memcpy(numbers, bytes.data() + 1, 8);
  const std::vector<std::string_view> fields = fuzz::Split(bytes.substr(9), std::string_view("\0", 1), 6);
  auto field = [&](size_t i) { return i < fields.size() ? std::string(fields[i]) : std::string(); };
  const std::string message = field(0), step = field(1);
  Status sent = (selector & 0x80)
                    ? Status(CudaErrorInfo{numbers[0], field(2), field(3), field(4), field(5), numbers[1]}, message)
                    : Status(static_cast<StatusCode>(1 + selector % 9), message);

  SocketPair sockets;
  FUZZ_CHECK(wire::WriteAnswer(sockets.fd(1), 7, wire::ErrorToWire(sent, step)), "WriteAnswer");
  wire::AnswerReader reader;
  std::deque<wire::Answer> answers;
  std::string transport;
  Result<wire::AnswerReader::Connection> read = reader.ReadAvailable(sockets.fd(0), &answers, &transport);
  FUZZ_CHECK(read.ok() && *read == wire::AnswerReader::Connection::kOpen && answers.size() == 1,
             read.ok() ? transport : read.status().ToString());
  const wire::Answer* answer = &answers.front();
  FUZZ_CHECK(answer->batch == 7, "batch");
  std::string received_step;
  Status received = wire::ErrorFromWire(answer->message, &received_step);
  FUZZ_CHECK(received.code() == sent.code(), sent.ToString() + " came back as " + received.ToString());
  FUZZ_CHECK(received.cuda_error().has_value() == sent.cuda_error().has_value(), received.ToString());
  if (sent.cuda_error()) {
    const CudaErrorInfo &s = *sent.cuda_error(), &r = *received.cuda_error();
    FUZZ_CHECK(r.code == s.code && r.line == s.line, received.ToString());
    if (fuzz::IsValidUtf8(s.name) && fuzz::IsValidUtf8(s.string) && fuzz::IsValidUtf8(s.api) &&
        fuzz::IsValidUtf8(s.file)) {
      FUZZ_CHECK(r.name == s.name && r.string == s.string && r.api == s.api && r.file == s.file, received.ToString());
    }
  }
  if (fuzz::IsValidUtf8(message)) FUZZ_CHECK(received.message() == message, received.ToString());
  if (fuzz::IsValidUtf8(step)) FUZZ_CHECK(received_step == step, received_step);
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > faultline::kMaxInput) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  faultline::ReadFrames(bytes);
  faultline::RoundTrip(bytes);
  return 0;
}
