// Provides FlushStdout: whether what a command line printed reached its
// stdout. A table or JSON lost to a full disk or a closed pipe must fail
// the command, not read as the outcome it would have shown.
#ifndef FAULTLINE_REFERENCE_BASE_FLUSH_STDOUT_H_
#define FAULTLINE_REFERENCE_BASE_FLUSH_STDOUT_H_

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace faultline {

// Flushes std::cout and stdout; "" when everything written reached the
// file, else why not: errno as the failed write left it ("No space left on
// device"; a std::endl may have made that write before this call), or "an
// earlier write failed" when errno says nothing.
inline std::string FlushStdout() {
  std::cout.flush();
  const bool stream_failed = !std::cout;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int error = errno;
  if (!stream_failed && !flush_failed && !std::ferror(stdout)) return "";
  return error != 0 ? std::strerror(error) : "an earlier write failed";
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_FLUSH_STDOUT_H_
