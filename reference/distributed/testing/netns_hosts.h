// Provides NetnsHosts: 1 to 16 "hosts" on this machine for multi-host MPI
// tests, each a Linux network namespace with its own address, joined by veth
// links to a bridge in a switch namespace:
//
//   flmh-<pid>-<start>-<n>-h0: fl0 10.77.0.1/24 <-veth-> p0 -+
//   flmh-<pid>-<start>-<n>-h1: fl0 10.77.0.2/24 <-veth-> p1 -+- br0 in flmh-<pid>-<start>-<n>-sw
//   ...                                                      -+
//
// The addresses exist only inside these namespaces (no route leaves them,
// nothing is added to the machine's own namespace), so two fixtures can run
// side by side. A process entering a host (EnterHost) also gets its own UTS
// namespace whose hostname is "fl-host<k>", so gethostname() tells the hosts
// apart as it would on separate machines.
//
// Cleanup: the destructor kills every process left in the namespaces and
// deletes them (deleting a namespace deletes its links). A run that was
// killed cannot do that, so Create first sweeps: every "flmh-" namespace
// whose owner (the pid and start time in its name) is no longer running is
// emptied and deleted.
//
// Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2's `ip`. Where
// namespaces cannot be made, Create fails with kNetnsNotPermitted in the
// message; tests fail on it unless FAULTLINE_SKIP_MULTIHOST=1 asks to skip
// them on purpose (README, "Multi-host tests").
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_NETNS_HOSTS_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_NETNS_HOSTS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/status.h"

namespace faultline {

// The start of the error when this machine does not allow network namespaces.
inline constexpr const char kNetnsNotPermitted[] = "network namespaces are not permitted on this machine";
// Set to 1 to skip the multi-host tests on purpose.
inline constexpr const char kSkipMultiHostEnv[] = "FAULTLINE_SKIP_MULTIHOST";
// Every namespace a fixture makes starts with this.
inline constexpr const char kNetnsPrefix[] = "flmh-";
// The hosts' subnet (inside the namespaces only).
inline constexpr const char kNetnsSubnet[] = "10.77.0.0/24";

class NetnsHosts {
 public:
  // Sweeps stale namespaces, then makes `hosts` hosts (1..16) on a bridge.
  static Result<std::unique_ptr<NetnsHosts>> Create(int hosts);
  // Destroy(); errors go to stderr.
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  int size() const { return hosts_; }
  // "flmh-<pid>-<start>-<n>": every namespace of this fixture starts with it.
  const std::string& prefix() const { return prefix_; }
  std::string netns(int host) const { return prefix_ + "-h" + std::to_string(host); }
  std::string switch_netns() const { return prefix_ + "-sw"; }
  static std::string hostname(int host) { return "fl-host" + std::to_string(host); }
  static std::string address(int host) { return "10.77.0." + std::to_string(host + 1); }
  // Every namespace of this fixture that exists now.
  std::vector<std::string> Namespaces() const;

  // Takes the switch end of the host's link down (a pulled cable) or up.
  Status SetLinkUp(int host, bool up);
  // Runs `ip -n <host's namespace> args...` (e.g. to give a host another
  // address); fails with ip's output.
  Status Ip(int host, const std::vector<std::string>& args) const;

  // Processes inside any of the fixture's namespaces.
  std::vector<pid_t> Processes() const;
  // Waits up to `grace` for the namespaces to empty; returns who is left.
  std::vector<pid_t> WaitUntilEmpty(std::chrono::milliseconds grace) const;

  // Kills every process in the namespaces, deletes them, and checks that
  // they are gone. Idempotent.
  Status Destroy();

  // For the launcher's ssh stand-in: "address,netns,hostname;..." per host.
  std::string AgentMap() const;

 private:
  NetnsHosts(int hosts, std::string prefix) : hosts_(hosts), prefix_(std::move(prefix)) {}

  int hosts_;
  std::string prefix_;
  std::vector<std::string> made_;  // namespaces created, in creation order
};

// Processes inside network namespace `netns` (a name under /run/netns).
std::vector<pid_t> ProcessesInNetns(const std::string& netns);

// Moves this process into host namespace `netns` and a new UTS namespace
// named `hostname`. For a freshly forked child or an exec stand-in: the
// calling thread must be the only one.
Status EnterHost(const std::string& netns, const std::string& hostname);

// Looks up `address` in an AgentMap() text: its netns and hostname.
Result<std::pair<std::string, std::string>> FindHostInAgentMap(const std::string& map, const std::string& address);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_NETNS_HOSTS_H_
