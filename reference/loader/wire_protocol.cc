// Implements the loader's wire protocol (wire_protocol.h).
#include "reference/loader/wire_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "reference/base/status_json.h"

namespace faultline {
namespace wire {

Status WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // A socket, so a dead peer is an EPIPE error rather than a SIGPIPE.
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return UnavailableError(std::string("pipe write failed: ") + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

Result<bool> ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t r = read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(std::string("pipe read failed: ") + std::strerror(errno));
    if (r == 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool WriteAnswer(int fd, int64_t batch, const std::string& message) {
  int64_t header[2] = {batch, static_cast<int64_t>(message.size())};
  return WriteAll(fd, header, sizeof(header)).ok() && WriteAll(fd, message.data(), message.size()).ok();
}

Result<std::optional<Answer>> ReadAnswer(int fd, std::string* transport) {
  int64_t header[2];
  Result<bool> got = ReadAll(fd, header, sizeof(header));
  if (!got.ok() || !*got) {
    *transport = got.ok() ? "the result connection closed" : got.status().message();
    return std::optional<Answer>();
  }
  if (header[1] < 0 || header[1] > kMaxAnswerBytes) {
    return InternalError("a malformed answer header (minibatch " + std::to_string(header[0]) + ", message length " +
                         std::to_string(header[1]) + "; expected a length of 0.." + std::to_string(kMaxAnswerBytes) +
                         ")");
  }
  Answer answer{header[0], std::string(static_cast<size_t>(header[1]), '\0')};
  Result<bool> complete = ReadAll(fd, answer.message.data(), answer.message.size());
  if (!complete.ok() || !*complete) {
    *transport = complete.ok() ? "the result connection closed mid-answer" : complete.status().message();
    return std::optional<Answer>();
  }
  return std::optional<Answer>(std::move(answer));
}

std::string ErrorToWire(const Status& status, const std::string& step) {
  nlohmann::json j = StatusToJson(status);
  j["step"] = step;
  // StatusToJson's strings are valid UTF-8; `replace` covers the step too.
  return j.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

Status ErrorFromWire(const std::string& wire, std::string* step) {
  nlohmann::json j = nlohmann::json::parse(wire, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InternalError("unreadable worker error: " + wire);
  const auto it = j.find("step");
  *step = it != j.end() && it->is_string() ? it->get<std::string>() : "";
  return StatusFromJson(j);
}

}  // namespace wire
}  // namespace faultline
