// Provides WriteAll, ReadAll and ReadToEnd: the whole of a buffer written to,
// or read from, a file descriptor, whatever short transfers and signals
// (EINTR) the kernel interposes. Pipes, sockets and regular files alike.
#ifndef FAULTLINE_REFERENCE_BASE_FD_IO_H_
#define FAULTLINE_REFERENCE_BASE_FD_IO_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace faultline {

// Writes all `n` bytes at `data` to `fd`. On a socket it sends with
// MSG_NOSIGNAL, so a peer that is gone is an error (EPIPE) rather than a
// SIGPIPE that ends the process. Fails with Unavailable
// "write failed: <strerror>"; some of the bytes may have been written.
Status WriteAll(int fd, const void* data, size_t n);
inline Status WriteAll(int fd, std::string_view data) { return WriteAll(fd, data.data(), data.size()); }

// Reads exactly `n` bytes into `data`, waiting for them. End of file before
// the last byte is OutOfRange "end of file after K of N bytes", so that a
// caller can tell a peer that closed from a read that failed, which is
// Unavailable "read failed: <strerror>".
Status ReadAll(int fd, void* data, size_t n);

// Reads until end of file (a child's output through a pipe) and returns it
// all; a read that fails is Unavailable "read failed: <strerror>".
Result<std::string> ReadToEnd(int fd);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_FD_IO_H_
