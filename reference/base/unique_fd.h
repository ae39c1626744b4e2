// Provides UniqueFd: a file descriptor with one owner, closed exactly once,
// when its owner lets go of it (destroyed, reset, or Close() for a caller
// that needs close()'s error).
//
// EINTR: close() is never retried. On Linux the descriptor is released
// before close() can fail, EINTR included (close(2), "Dealing with error
// returns"), so a retry would close nothing, or, if another thread opened
// a file meanwhile and got the same number, that thread's file.
//
// Header only, and the destructor and reset() make one system call and
// touch no memory: safe in a forked child before it execs, in a signal
// handler, and in the drop-in libraries preloaded into other programs.
#ifndef FAULTLINE_REFERENCE_BASE_UNIQUE_FD_H_
#define FAULTLINE_REFERENCE_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "reference/base/status.h"

namespace faultline {

// Owns one descriptor (-1: none). Move-only: a copy would close it twice.
class UniqueFd {
 public:
  UniqueFd() = default;
  // Takes `fd` (a negative number: none, as a failed open() returns).
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  // Safe on itself: release() empties `other` before reset() looks at it.
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Gives the descriptor up without closing it (a child that keeps it as
  // its channel, a number handed across exec); this holds none after.
  [[nodiscard]] int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

  // Closes the descriptor held (its error ignored: see Close) and takes
  // `fd`. errno is kept, so that a caller may still report the failure
  // that made it close. Taking the descriptor it already holds keeps it
  // open: closing it would leave this owning a number that is free.
  void reset(int fd = -1) {
    if (fd == fd_) return;
    if (fd_ >= 0) {
      const int saved = errno;
      ::close(fd_);
      errno = saved;
    }
    fd_ = fd;
  }

  // Closes the descriptor now and says whether close() failed: where a
  // file's last write error shows (NFS, a full disk on a delayed write) or
  // a bad number (EBADF). Unavailable "close failed: <strerror>"; EINTR is
  // reported too (whether the data reached the file is then unknown), but
  // the descriptor is released either way and not closed again. OK when
  // none is held.
  Status Close() {
    const int fd = release();
    if (fd < 0 || ::close(fd) == 0) return OkStatus();
    return UnavailableError(std::string("close failed: ") + std::strerror(errno));
  }

 private:
  int fd_ = -1;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_UNIQUE_FD_H_
