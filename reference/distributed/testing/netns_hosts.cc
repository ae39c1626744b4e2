// Implements NetnsHosts with iproute2's `ip` and /proc.
#include "reference/distributed/testing/netns_hosts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sstream>
#include <thread>

#include "reference/base/fd_io.h"
#include "reference/base/parse_int.h"
#include "reference/base/str_join.h"
#include "reference/base/unique_fd.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

constexpr const char kNetnsDir[] = "/run/netns";
constexpr int kMaxHosts = 16;

// Runs `ip args...` and returns its output, or an error with the output and exit status.
Result<std::string> RunIp(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return UnavailableError(std::string("pipe: ") + std::strerror(errno));
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::vector<std::string> argv{"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c_argv;
  for (std::string& arg : argv) c_argv.push_back(arg.data());
  c_argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return UnavailableError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {  // execs or _exits: the pipe's ends close on exec, not here
    dup2(write_end.get(), STDOUT_FILENO);
    dup2(write_end.get(), STDERR_FILENO);
    execvp("ip", c_argv.data());
    const char message[] = "cannot run ip: not installed (Debian package iproute2)\n";
    (void)!write(STDERR_FILENO, message, sizeof(message) - 1);
    _exit(127);
  }
  write_end.reset();  // else the read below never sees end of file
  Result<std::string> read = ReadToEnd(read_end.get());
  read_end.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string command = "ip";
  for (const std::string& arg : args) command += " " + arg;
  if (!read.ok()) return UnavailableError("reading the output of `" + command + "`: " + read.status().message());
  std::string output = *read;
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return output;
  return UnavailableError("`" + command + "` failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          "): " + output);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::vector<std::string> ListNetns() {
  std::vector<std::string> names;
  DIR* dir = opendir(kNetnsDir);
  if (dir == nullptr) return names;
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  return names;
}

// Kills every process in `netns` and waits up to 5 s for them to go.
std::vector<pid_t> EmptyNetns(const std::string& netns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    std::vector<pid_t> left = ProcessesInNetns(netns);
    if (left.empty() || std::chrono::steady_clock::now() > deadline) return left;
    for (pid_t pid : left) kill(pid, SIGKILL);
    // A killed process leaves the namespace as it exits; look again shortly.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status DeleteNetns(const std::string& netns) {
  if (!Exists(std::string(kNetnsDir) + "/" + netns)) return OkStatus();
  const std::vector<pid_t> left = EmptyNetns(netns);
  if (!left.empty()) {
    return UnavailableError("namespace " + netns + " still holds " + std::to_string(left.size()) +
                            " process(es) after SIGKILL, e.g. pid " + std::to_string(left[0]));
  }
  return RunIp({"netns", "del", netns}).status();
}

}  // namespace

std::vector<pid_t> ProcessesInNetns(const std::string& netns) {
  std::vector<pid_t> pids;
  struct stat target;
  if (stat((std::string(kNetnsDir) + "/" + netns).c_str(), &target) != 0) return pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    const std::optional<pid_t> pid = ParseWholeNonNegative<pid_t>(entry->d_name);
    if (!pid) continue;
    struct stat ns;
    const std::string path = std::string("/proc/") + entry->d_name + "/ns/net";
    if (stat(path.c_str(), &ns) == 0 && ns.st_dev == target.st_dev && ns.st_ino == target.st_ino) {
      pids.push_back(*pid);
    }
  }
  closedir(proc);
  return pids;
}

namespace {

// Empties and deletes every "flmh-" namespace whose owner process is gone;
// returns their names.
Result<std::vector<std::string>> SweepStaleNetns() {
  std::vector<std::string> removed;
  std::vector<std::string> errors;
  for (const std::string& name : ListNetns()) {
    if (name.rfind(kNetnsPrefix, 0) != 0) continue;
    // flmh-<pid>-<start>-<n>-<role>
    std::istringstream parts(name.substr(std::strlen(kNetnsPrefix)));
    std::string pid_text, start;
    if (!std::getline(parts, pid_text, '-') || !std::getline(parts, start, '-')) continue;
    const std::optional<pid_t> pid = ParseWholeNonNegative<pid_t>(pid_text);
    const std::optional<uint64_t> start_ticks = ParseWholeNonNegative<uint64_t>(start);
    if (!pid || !start_ticks) continue;
    // Its owner still runs. A killed test stays a zombie until its parent
    // (Bazel, a shell) waits for it, and owns nothing by then.
    if (ProcessRunning(ProcessRef{*pid, *start_ticks})) continue;
    Status deleted = DeleteNetns(name);
    if (deleted.ok()) {
      removed.push_back(name);
    } else {
      errors.push_back(deleted.message());
    }
  }
  if (!errors.empty()) return UnavailableError("cannot remove stale namespaces: " + StrJoin(errors, "; "));
  return removed;
}

}  // namespace

Result<std::unique_ptr<NetnsHosts>> NetnsHosts::Create(int hosts) {
  if (hosts < 1 || hosts > kMaxHosts) {
    return InvalidArgumentError("hosts is " + std::to_string(hosts) + "; expected 1 to " + std::to_string(kMaxHosts));
  }
  // Probe first: the sweep needs the same rights, and its error would be less clear.
  static std::atomic<int> sequence{0};
  const pid_t self = getpid();
  std::unique_ptr<NetnsHosts> fixture(new NetnsHosts(hosts, std::string(kNetnsPrefix) + std::to_string(self) + "-" +
                                                                std::to_string(SelfProcessRef().start_ticks) + "-" +
                                                                std::to_string(sequence++)));
  const std::string sw = fixture->switch_netns();
  Result<std::string> made = RunIp({"netns", "add", sw});
  if (!made.ok()) {
    return FailedPreconditionError(std::string(kNetnsNotPermitted) + " (" + made.status().message() +
                                   "): the multi-host tests need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and "
                                   "iproute2; set " +
                                   kSkipMultiHostEnv + "=1 to skip them on purpose");
  }
  fixture->made_.push_back(sw);
  FL_RETURN_IF_ERROR(SweepStaleNetns().status());

  const std::vector<std::vector<std::string>> bridge = {
      {"-n", sw, "link", "set", "lo", "up"},
      {"-n", sw, "link", "add", "br0", "type", "bridge"},
      {"-n", sw, "link", "set", "br0", "up"},
  };
  for (const auto& command : bridge) FL_RETURN_IF_ERROR(RunIp(command).status());
  for (int k = 0; k < hosts; ++k) {
    const std::string ns = fixture->netns(k);
    const std::string port = "p" + std::to_string(k);
    FL_RETURN_IF_ERROR(RunIp({"netns", "add", ns}).status());
    fixture->made_.push_back(ns);
    const std::vector<std::vector<std::string>> host = {
        {"-n", ns, "link", "set", "lo", "up"},
        {"-n", sw, "link", "add", port, "type", "veth", "peer", "name", "fl0", "netns", ns},
        {"-n", sw, "link", "set", port, "master", "br0"},
        {"-n", sw, "link", "set", port, "up"},
        {"-n", ns, "link", "set", "fl0", "addrgenmode", "none"},  // no IPv6 link-local: one address per host
        {"-n", ns, "addr", "add", address(k) + "/24", "dev", "fl0"},
        {"-n", ns, "link", "set", "fl0", "up"},
    };
    for (const auto& command : host) FL_RETURN_IF_ERROR(RunIp(command).status());
  }
  return fixture;
}

NetnsHosts::~NetnsHosts() {
  Status destroyed = Destroy();
  if (!destroyed.ok()) std::fprintf(stderr, "NetnsHosts: %s\n", destroyed.ToString().c_str());
}

std::vector<std::string> NetnsHosts::Namespaces() const {
  std::vector<std::string> out;
  for (const std::string& name : ListNetns()) {
    if (name.rfind(prefix_ + "-", 0) == 0) out.push_back(name);
  }
  return out;
}

Status NetnsHosts::SetLinkUp(int host, bool up) {
  return RunIp({"-n", switch_netns(), "link", "set", "p" + std::to_string(host), up ? "up" : "down"}).status();
}

Status NetnsHosts::Ip(int host, const std::vector<std::string>& args) const {
  if (host < 0 || host >= hosts_) {
    return InvalidArgumentError("host is " + std::to_string(host) + "; expected 0 to " + std::to_string(hosts_ - 1));
  }
  std::vector<std::string> command = {"-n", netns(host)};
  command.insert(command.end(), args.begin(), args.end());
  return RunIp(command).status();
}

std::vector<pid_t> NetnsHosts::Processes() const {
  std::vector<pid_t> pids;
  for (const std::string& ns : made_) {
    for (pid_t pid : ProcessesInNetns(ns)) pids.push_back(pid);
  }
  return pids;
}

std::vector<pid_t> NetnsHosts::WaitUntilEmpty(std::chrono::milliseconds grace) const {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (;;) {
    std::vector<pid_t> left = Processes();
    if (left.empty() || std::chrono::steady_clock::now() > deadline) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // poll: processes leave as they exit
  }
}

Status NetnsHosts::Destroy() {
  std::vector<std::string> errors;
  // Hosts first (their processes), the switch last.
  for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
    Status deleted = DeleteNetns(*it);
    if (!deleted.ok()) errors.push_back(deleted.message());
  }
  made_.clear();
  for (const std::string& left : Namespaces()) errors.push_back("namespace " + left + " still exists");
  if (!errors.empty()) return UnavailableError("cleanup of " + prefix_ + " failed: " + StrJoin(errors, "; "));
  return OkStatus();
}

std::string NetnsHosts::AgentMap() const {
  std::vector<std::string> entries;
  for (int k = 0; k < hosts_; ++k) entries.push_back(address(k) + "," + netns(k) + "," + hostname(k));
  return StrJoin(entries, ";");
}

Result<std::pair<std::string, std::string>> FindHostInAgentMap(const std::string& map, const std::string& address) {
  std::istringstream entries(map);
  for (std::string entry; std::getline(entries, entry, ';');) {
    std::istringstream fields(entry);
    std::string ip, netns, hostname;
    if (std::getline(fields, ip, ',') && std::getline(fields, netns, ',') && std::getline(fields, hostname) &&
        ip == address) {
      return std::make_pair(netns, hostname);
    }
  }
  return NotFoundError("host '" + address + "' is not one of the namespace hosts (" + map + ")");
}

Status EnterHost(const std::string& netns, const std::string& hostname) {
  const std::string path = std::string(kNetnsDir) + "/" + netns;
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return UnavailableError("open " + path + ": " + std::strerror(errno));
  const int entered = setns(fd.get(), CLONE_NEWNET);
  const int saved = errno;
  fd.reset();
  if (entered != 0) return UnavailableError("setns " + path + ": " + std::strerror(saved));
  if (unshare(CLONE_NEWUTS) != 0)
    return UnavailableError(std::string("unshare(CLONE_NEWUTS): ") + std::strerror(errno));
  if (sethostname(hostname.c_str(), hostname.size()) != 0) {
    return UnavailableError("sethostname " + hostname + ": " + std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace faultline
