// Implements ProbeDeviceCount: asks a backend for its device count in a
// forked child, so that the asking process stays free of CUDA (see Note
// [Fork poisoning] in docs/simcuda.md: a process that initialized CUDA can
// no longer fork working children).
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "reference/base/fd_io.h"
#include "reference/base/parse_int.h"
#include "reference/base/unique_fd.h"
#include "reference/runtime/backends.h"
#include "reference/runtime/cuda_errors.h"

namespace faultline {
namespace {

// The child's answer: "count <n>" or "error <code>\t<name>\t<string>\t<message>".
std::string Answer(const Result<int>& count) {
  if (count.ok()) return "count " + std::to_string(*count);
  const Status& s = count.status();
  if (!s.cuda_error()) return "error -1\t\t\t" + s.message();
  const CudaErrorInfo& e = *s.cuda_error();
  return "error " + std::to_string(e.code) + "\t" + e.name + "\t" + e.string + "\t" + s.message();
}

Result<int> ParseAnswer(const std::string& text) {
  const auto unreadable = [&text] { return InternalError("device probe: unreadable answer '" + text + "'"); };
  if (text.rfind("count ", 0) == 0) {
    const std::optional<int> count = ParseWhole<int>(std::string_view(text).substr(6));
    if (!count) return unreadable();
    return *count;
  }
  if (text.rfind("error ", 0) != 0) return unreadable();
  size_t a = text.find('\t'), b = text.find('\t', a + 1), c = text.find('\t', b + 1);
  if (a == std::string::npos || b == std::string::npos || c == std::string::npos) return unreadable();
  const std::optional<int> parsed_code = ParseWhole<int>(std::string_view(text).substr(6, a - 6));
  if (!parsed_code) return unreadable();
  const int code = *parsed_code;
  const std::string message = text.substr(c + 1);
  if (code < 0) return UnavailableError(message);
  const std::string name = text.substr(a + 1, b - a - 1), string = text.substr(b + 1, c - b - 1);
  return CudaCallError(code, name.c_str(), string.c_str(), "cudaGetDeviceCount", SourceLocation::Current());
}

}  // namespace

Result<int> ProbeDeviceCount(RuntimeKind kind) {
  DeviceRuntime& runtime = GetRuntime(kind);
  if (BackendInitialized(kind)) return runtime.GetDeviceCount();
  int fds[2];
  if (pipe(fds) != 0) return InternalError(std::string("device probe: pipe failed: ") + std::strerror(errno));
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  pid_t pid = fork();
  if (pid < 0) return InternalError(std::string("device probe: fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    read_end.reset();
    // A child that cannot write its answer exits 1: "did not exit cleanly".
    _exit(WriteAll(write_end.get(), Answer(runtime.GetDeviceCount())).ok() ? 0 : 1);
  }
  // This process's copy closed first: the read ends when the child's does.
  write_end.reset();
  const Result<std::string> read = ReadToEnd(read_end.get());
  read_end.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // A failed read first: the child whose answer was not read may have died of it.
  if (!read.ok()) return InternalError("device probe: reading the answer: " + read.status().message());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("device probe: the probing child (pid " + std::to_string(pid) + ") did not exit cleanly");
  }
  return ParseAnswer(*read);
}

}  // namespace faultline
