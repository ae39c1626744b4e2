// Fuzzes the parent's end of the data loader's worker wire protocol
// (reference/loader/wire_protocol.h). Feeds: the input as the bytes a worker
// wrote to its result socket (a stream of {batch, length} + message frames),
// read back with ReadAnswer until it stops; every non-empty message goes
// through ErrorFromWire (and so StatusFromJson). Then a round trip: an error
// built from the input's bytes, sent with ErrorToWire and WriteAnswer and
// received with ReadAnswer and ErrorFromWire. Asserts: nothing crashes or
// throws; ReadAnswer consumes exactly the frames present and stops with a
// transport reason or a malformed-length error; a worker's error is never
// an OK status; the round trip keeps the code, the CUDA detail, the step
// and (for valid UTF-8) the message.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "properties/fuzz/fuzz_support.h"
#include "reference/loader/wire_protocol.h"

namespace faultline {
namespace {

constexpr size_t kMaxInput = 64 * 1024;  // fits in a socket buffer, so one thread can write then read

struct SocketPair {
  int fds[2];
  SocketPair() { FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, std::strerror(errno)); }
  ~SocketPair() {
    close(fds[0]);
    close(fds[1]);
  }
};

void CheckErrorFromWire(const std::string& message) {
  std::string step = "unset";
  Status status = wire::ErrorFromWire(message, &step);
  FUZZ_CHECK(!status.ok(), "a worker's error message became an OK status: " + message);
  FUZZ_CHECK(status.code() > StatusCode::kOk && status.code() <= StatusCode::kInternal, status.ToString());
  FUZZ_CHECK(!status.cuda_error() || status.code() == StatusCode::kDeviceError, status.ToString());
}

void ReadFrames(std::string_view bytes) {
  SocketPair sockets;
  FUZZ_CHECK(wire::WriteAll(sockets.fds[1], bytes.data(), bytes.size()).ok(), "write");
  shutdown(sockets.fds[1], SHUT_WR);
  size_t consumed = 0;
  for (;;) {
    std::string transport;
    Result<std::optional<wire::Answer>> answer = wire::ReadAnswer(sockets.fds[0], &transport);
    if (!answer.ok()) {
      FUZZ_CHECK(answer.status().code() == StatusCode::kInternal, answer.status().ToString());
      FUZZ_CHECK(answer.status().message().rfind("a malformed answer header", 0) == 0, answer.status().ToString());
      int64_t length;
      FUZZ_CHECK(bytes.size() - consumed >= 16, "malformed-length error without a whole header");
      std::memcpy(&length, bytes.data() + consumed + 8, 8);
      FUZZ_CHECK(length < 0 || length > wire::kMaxAnswerBytes, "a valid length was called malformed");
      return;
    }
    if (!answer->has_value()) {
      const size_t left = bytes.size() - consumed;
      if (left < 16) {
        FUZZ_CHECK(transport == "the result connection closed", transport);
      } else {
        FUZZ_CHECK(transport == "the result connection closed mid-answer", transport);
      }
      return;
    }
    const wire::Answer& a = **answer;
    FUZZ_CHECK(bytes.size() - consumed >= 16 + a.message.size(), "an answer longer than the input");
    int64_t header[2];
    std::memcpy(header, bytes.data() + consumed, 16);
    FUZZ_CHECK(header[0] == a.batch && header[1] == static_cast<int64_t>(a.message.size()), "header mismatch");
    FUZZ_CHECK(bytes.substr(consumed + 16, a.message.size()) == a.message, "message mismatch");
    consumed += 16 + a.message.size();
    if (!a.message.empty()) CheckErrorFromWire(a.message);
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
  FUZZ_CHECK(wire::WriteAnswer(sockets.fds[1], 7, wire::ErrorToWire(sent, step)), "WriteAnswer");
  std::string transport;
  Result<std::optional<wire::Answer>> answer = wire::ReadAnswer(sockets.fds[0], &transport);
  FUZZ_CHECK(answer.ok() && answer->has_value(), answer.ok() ? transport : answer.status().ToString());
  FUZZ_CHECK((*answer)->batch == 7, "batch");
  std::string received_step;
  Status received = wire::ErrorFromWire((*answer)->message, &received_step);
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
