// Implements the per-process report. Each process owns one file, replaced
// whole (write, then rename) at each event, so a reader never sees half a
// record and a process killed at any moment leaves its last state.
#include "reference/dropin/process_report.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "reference/base/fd_io.h"
#include "reference/base/unique_fd.h"

namespace faultline::dropin {
namespace {

struct Failure {
  std::string call;
  int code = 0;
  std::string name;
};

struct Record {
  std::string dir;  // "" when no report was asked for
  pid_t pid = 0;
  pid_t parent = 0;
  const char* start = "exec";
  bool forked_after_initialization = false;
  pid_t initialized_in = 0;  // the process that initialized CUDA (this one or an ancestor)
  std::optional<std::string> initialized_where;
  std::optional<Failure> first_failure;
};

// Function-local, never destroyed: the library's constructor runs before
// this file's globals would be initialized, and forked children exit
// without destructors.
struct State {
  std::mutex mu;
  Record record;
};
State& TheState() {
  static auto* state = new State();
  return *state;
}

std::string CommandLine() {
  UniqueFd fd(open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  Result<std::string> text = ReadToEnd(fd.get());
  fd.reset();
  if (!text.ok()) return "";
  std::string line = *text;
  while (!line.empty() && line.back() == '\0') line.pop_back();
  for (char& c : line) c = c == '\0' ? ' ' : c;
  return line;
}

// Requires TheState().mu held. A process with nothing CUDA to say (a
// shell's helpers under the preload) gets no file.
void WriteLocked() {
  const Record& r = TheState().record;
  if (r.dir.empty() || (!r.initialized_where && !r.first_failure && !r.forked_after_initialization)) return;
  nlohmann::json j;
  j["pid"] = TheState().record.pid;
  j["parent"] = TheState().record.parent;
  j["start"] = TheState().record.start;
  j["command"] = CommandLine();
  j["forked_after_initialization"] = TheState().record.forked_after_initialization;
  j["initialized_where"] =
      TheState().record.initialized_where ? nlohmann::json(*TheState().record.initialized_where) : nullptr;
  if (TheState().record.first_failure) {
    j["first_failing_call"] = {{"call", TheState().record.first_failure->call},
                               {"code", TheState().record.first_failure->code},
                               {"name", TheState().record.first_failure->name}};
  } else {
    j["first_failing_call"] = nullptr;
  }
  const std::string path = TheState().record.dir + "/" + std::to_string(TheState().record.pid) + ".json";
  const std::string temporary = path + ".tmp";
  UniqueFd fd(open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return;  // the report is best effort: the program itself must not fail
  const bool written = WriteAll(fd.get(), j.dump() + "\n").ok();
  fd.reset();
  if (!written || rename(temporary.c_str(), path.c_str()) != 0) unlink(temporary.c_str());
}

void ForkPrepare() { TheState().mu.lock(); }
void ForkParent() { TheState().mu.unlock(); }
void ForkChild() {
  TheState().mu.unlock();  // ForkPrepare's lock, copied into the child
  std::lock_guard<std::mutex> lock(TheState().mu);
  TheState().record.parent = TheState().record.pid;
  TheState().record.pid = getpid();
  TheState().record.start = "fork";
  TheState().record.forked_after_initialization = TheState().record.initialized_in != 0;
  TheState().record.initialized_where.reset();
  TheState().record.first_failure.reset();
  WriteLocked();
}

}  // namespace

void StartProcessReport() {
  std::lock_guard<std::mutex> lock(TheState().mu);
  const char* dir = std::getenv("FAULTLINE_SIMCUDA_REPORT_DIR");
  TheState().record.dir = dir != nullptr ? dir : "";
  TheState().record.pid = getpid();
  TheState().record.parent = getppid();
  pthread_atfork(ForkPrepare, ForkParent, ForkChild);
  WriteLocked();
}

void ReportInitialized(const std::string& site) {
  std::lock_guard<std::mutex> lock(TheState().mu);
  TheState().record.initialized_in = TheState().record.pid;
  TheState().record.initialized_where = site;
  WriteLocked();
}

void ReportFailure(const char* api, int code, const char* name) {
  std::lock_guard<std::mutex> lock(TheState().mu);
  if (TheState().record.first_failure) return;
  TheState().record.first_failure = Failure{api, code, name};
  WriteLocked();
}

}  // namespace faultline::dropin
