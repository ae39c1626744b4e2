// Implements the loader's wire protocol (wire_protocol.h).
#include "reference/loader/wire_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "reference/base/fd_io.h"
#include "reference/base/status_json.h"

namespace faultline {
namespace wire {

// fd_io's loops, with this protocol's error texts ("pipe write failed: Broken
// pipe", as the loader's reports and docs/reliability.md have them) and its
// end of file (false, not an error).
Status WriteAll(int fd, const void* data, size_t n) {
  const Status written = faultline::WriteAll(fd, data, n);
  return written.ok() ? written : UnavailableError("pipe " + written.message());
}

Result<bool> ReadAll(int fd, void* data, size_t n) {
  const Status got = faultline::ReadAll(fd, data, n);
  if (got.code() == StatusCode::kOutOfRange) return false;  // end of file
  if (!got.ok()) return UnavailableError("pipe " + got.message());
  return true;
}

bool WriteAnswer(int fd, int64_t batch, const std::string& message) {
  int64_t header[2] = {batch, static_cast<int64_t>(message.size())};
  return WriteAll(fd, header, sizeof(header)).ok() && WriteAll(fd, message.data(), message.size()).ok();
}

namespace {
constexpr size_t kHeaderBytes = 2 * sizeof(int64_t);
}  // namespace

Status AnswerReader::Feed(std::string_view bytes, std::deque<Answer>* answers) {
  if (!broken_.ok()) return broken_;
  pending_.append(bytes.data(), bytes.size());
  size_t used = 0;
  while (pending_.size() - used >= kHeaderBytes) {
    int64_t header[2];
    std::memcpy(header, pending_.data() + used, kHeaderBytes);
    if (header[1] < 0 || header[1] > kMaxAnswerBytes) {
      broken_ = InternalError("a malformed answer header (minibatch " + std::to_string(header[0]) +
                              ", message length " + std::to_string(header[1]) + "; expected a length of 0.." +
                              std::to_string(kMaxAnswerBytes) + ")");
      pending_.clear();
      return broken_;
    }
    const size_t length = static_cast<size_t>(header[1]);
    if (pending_.size() - used - kHeaderBytes < length) break;
    answers->push_back(Answer{header[0], pending_.substr(used + kHeaderBytes, length)});
    used += kHeaderBytes + length;
  }
  pending_.erase(0, used);
  return OkStatus();
}

Result<AnswerReader::Connection> AnswerReader::ReadAvailable(int fd, std::deque<Answer>* answers,
                                                             std::string* transport, size_t max_bytes) {
  char buffer[64 * 1024];
  for (size_t total = 0; total < max_bytes;) {
    const ssize_t r = recv(fd, buffer, std::min(sizeof(buffer), max_bytes - total), MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Connection::kOpen;
    if (r <= 0) {
      const std::string partial = Partial();
      *transport = r < 0             ? std::string("pipe read failed: ") + std::strerror(errno)
                   : partial.empty() ? "the result connection closed"
                                     : "the result connection closed mid-answer (after " + partial + ")";
      return Connection::kClosed;
    }
    total += static_cast<size_t>(r);
    FL_RETURN_IF_ERROR(Feed(std::string_view(buffer, static_cast<size_t>(r)), answers));
  }
  return Connection::kOpen;
}

std::string AnswerReader::Partial() const {
  if (pending_.empty()) return "";
  if (pending_.size() < kHeaderBytes) {
    return std::to_string(pending_.size()) + " of the " + std::to_string(kHeaderBytes) + " bytes of an answer's header";
  }
  int64_t header[2];
  std::memcpy(header, pending_.data(), kHeaderBytes);
  return std::to_string(pending_.size()) + " of the " + std::to_string(kHeaderBytes + header[1]) +
         " bytes of its answer for minibatch " + std::to_string(header[0]);
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
