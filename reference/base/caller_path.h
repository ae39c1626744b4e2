// Provides CallerPath: a path from a command line, resolved against the
// folder the user ran the command from.
#ifndef FAULTLINE_REFERENCE_BASE_CALLER_PATH_H_
#define FAULTLINE_REFERENCE_BASE_CALLER_PATH_H_

#include <cstdlib>
#include <string>

namespace faultline {

// Under `bazel run` a binary starts in its runfiles folder, and Bazel names
// the folder the user ran it from in BUILD_WORKING_DIRECTORY: a relative
// `path` is taken from there. Absolute paths, and every path outside
// `bazel run`, are returned as they are.
inline std::string CallerPath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* dir = std::getenv("BUILD_WORKING_DIRECTORY");
  return dir != nullptr && *dir != '\0' ? std::string(dir) + "/" + path : path;
}

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_BASE_CALLER_PATH_H_
