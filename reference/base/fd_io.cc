// Implements WriteAll, ReadAll and ReadToEnd (fd_io.h).
#include "reference/base/fd_io.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace faultline {

Status WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  // send() works only on sockets; the first ENOTSOCK switches to write().
  bool socket = true;
  while (n > 0) {
    const ssize_t w = socket ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (w < 0) return UnavailableError(std::string("write failed: ") + std::strerror(errno));
    // Not expected for n > 0, and errno says nothing then: stop rather than spin.
    if (w == 0) return UnavailableError("write failed: the descriptor took no bytes");
    p += w;
    n -= static_cast<size_t>(w);
  }
  return OkStatus();
}

Status ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t r = read(fd, p + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(std::string("read failed: ") + std::strerror(errno));
    if (r == 0) {
      return OutOfRangeError("end of file after " + std::to_string(done) + " of " + std::to_string(n) + " bytes");
    }
    done += static_cast<size_t>(r);
  }
  return OkStatus();
}

Result<std::string> ReadToEnd(int fd) {
  std::string all;
  char buffer[4096];
  for (;;) {
    const ssize_t r = read(fd, buffer, sizeof(buffer));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return UnavailableError(std::string("read failed: ") + std::strerror(errno));
    if (r == 0) return all;
    all.append(buffer, static_cast<size_t>(r));
  }
}

}  // namespace faultline
