// NetnsHosts, the multi-host fixture: it makes hosts that processes can
// enter, removes everything it made (killing what still runs there), sweeps
// the namespaces of a run that was killed, and says clearly when network
// namespaces are not permitted.
#include "reference/distributed/testing/netns_hosts.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/process/process_ref.h"

namespace faultline {
namespace {

using testing::Contains;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;
using testing::SizeIs;

// Namespaces whose name starts with `prefix`.
std::vector<std::string> NamespacesStartingWith(const std::string& prefix) {
  Result<std::string> listing = []() -> Result<std::string> {
    std::string out;
    FILE* pipe = popen("ip netns list", "r");
    if (pipe == nullptr) return UnavailableError("popen");
    char line[512];
    while (fgets(line, sizeof(line), pipe) != nullptr) out += line;
    pclose(pipe);
    return out;
  }();
  std::vector<std::string> names;
  std::istringstream lines(listing.ok() ? *listing : "");
  for (std::string line; std::getline(lines, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

bool Skipped() {
  const char* skip = std::getenv(kSkipMultiHostEnv);
  return skip != nullptr && std::string(skip) == "1";
}

#define SKIP_IF_ASKED() \
  if (Skipped()) GTEST_SKIP() << kSkipMultiHostEnv << "=1: the multi-host tests are skipped on purpose"

TEST(NetnsHostsTest, MakesHostsToEnterAndRemovesEverythingItMade) {
  SKIP_IF_ASKED();
  Result<std::unique_ptr<NetnsHosts>> created = NetnsHosts::Create(3);
  FL_ASSERT_OK(created);
  NetnsHosts& hosts = **created;
  const std::string prefix = hosts.prefix();
  EXPECT_THAT(NamespacesStartingWith(prefix + "-"), SizeIs(4));  // 3 hosts and the switch
  EXPECT_THAT(hosts.Namespaces(), SizeIs(4));

  // A process on host 1 has host 1's name and address, and counts as inside.
  Result<ChildProcess> child = ChildProcess::Fork([&hosts] {
    Status entered = EnterHost(hosts.netns(1), NetnsHosts::hostname(1));
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    FILE* addr = popen("ip -4 -o addr show dev fl0", "r");
    char line[512] = {};
    if (addr == nullptr || fgets(line, sizeof(line), addr) == nullptr) line[0] = '\0';
    if (addr != nullptr) pclose(addr);
    ReportToParent(entered.ToString() + " host=" + name + " " + line + "|");
    for (;;) pause();
    return 0;
  });
  FL_ASSERT_OK(child);
  FL_ASSERT_OK(child->WaitForTranscript("|", std::chrono::seconds(10)));
  Result<ChildExit> not_yet = child->TryWait();
  FL_ASSERT_OK(not_yet);
  EXPECT_TRUE(child->running());
  EXPECT_THAT(hosts.Processes(), Contains(child->pid()));

  FL_ASSERT_OK(hosts.Destroy());
  Result<ChildExit> ended = child->Wait(std::chrono::seconds(5));
  FL_ASSERT_OK(ended);
  EXPECT_THAT(ended->transcript, HasSubstr("ok host=fl-host1 "));
  EXPECT_THAT(ended->transcript, HasSubstr("inet 10.77.0.2/24"));
  EXPECT_EQ(ended->end, ChildEnd::kSignaled) << ended->Describe();
  EXPECT_EQ(ended->signal, SIGKILL) << ended->Describe();
  EXPECT_THAT(NamespacesStartingWith(prefix), IsEmpty());
  EXPECT_THAT(hosts.Namespaces(), IsEmpty());
}

// The owner of these namespaces: makes two hosts, leaves a process in host
// 0, says it is ready, and waits to be killed (as a test killed half-way is).
int OwnerThatIsKilled(const std::vector<std::string>&) {
  Result<std::unique_ptr<NetnsHosts>> hosts = NetnsHosts::Create(2);
  if (!hosts.ok()) {
    ReportToParent("error " + hosts.status().ToString());
    return 1;
  }
  const std::string netns = (*hosts)->netns(0);
  int entered[2];
  if (pipe2(entered, O_CLOEXEC) != 0) {
    ReportToParent(std::string("error pipe2: ") + std::strerror(errno));
    return 1;
  }
  const pid_t inside = fork();
  if (inside == 0) {
    close(entered[0]);
    if (!EnterHost(netns, NetnsHosts::hostname(0)).ok()) _exit(1);  // closes its end unwritten
    const char byte = 1;
    (void)!write(entered[1], &byte, 1);
    for (;;) pause();
  }
  close(entered[1]);
  // Wait until it is inside, so that the sweep has a process to kill: it
  // says so, or ends (its end of the pipe closes); 10 s bounds a child stuck
  // on the way (within the parent's 20 s for "ready").
  pollfd told{entered[0], POLLIN, 0};
  char byte = 0;
  const bool said = poll(&told, 1, 10000) == 1 && read(entered[0], &byte, 1) == 1;
  close(entered[0]);
  if (!said) {
    kill(inside, SIGKILL);  // not left behind in host 0 after this owner ends
    waitpid(inside, nullptr, 0);
    ReportToParent("error: the process forked to enter host 0 (pid " + std::to_string(inside) +
                   ") did not say within 10 s that it was inside; it failed to enter, or is stuck");
    return 1;
  }
  if ((*hosts)->Processes().empty()) {
    kill(inside, SIGKILL);
    waitpid(inside, nullptr, 0);
    ReportToParent("error: the process inside host 0 (pid " + std::to_string(inside) +
                   ") is not among the host's processes");
    return 1;
  }
  ReportToParent("ready");
  for (;;) pause();
}
FL_REGISTER_CHILD("netns_owner_killed", OwnerThatIsKilled);

// The owner killed half-way has either been reaped by the time the next
// fixture starts, or is still a zombie (its parent has not waited yet): both
// own nothing any more.
class SweepTest : public testing::TestWithParam<bool> {};

TEST_P(SweepTest, SweepRemovesTheNamespacesOfAKilledRunAndKeepsLiveOnes) {
  SKIP_IF_ASKED();
  const bool reap_owner_first = GetParam();
  Result<std::unique_ptr<NetnsHosts>> live = NetnsHosts::Create(1);  // a live owner's: must stay
  FL_ASSERT_OK(live);

  Result<ChildProcess> owner = ChildProcess::Spawn("netns_owner_killed", {});
  FL_ASSERT_OK(owner);
  const Status ready = owner->WaitForTranscript("ready", std::chrono::seconds(20));
  FL_ASSERT_OK(ready);
  owner->Kill(SIGKILL);
  siginfo_t info{};  // wait until it has ended, without reaping it: a zombie
  ASSERT_EQ(waitid(P_PID, owner->pid(), &info, WEXITED | WNOWAIT), 0) << std::strerror(errno);
  const std::string stale_prefix = std::string(kNetnsPrefix) + std::to_string(owner->pid()) + "-";
  const std::vector<std::string> stale = NamespacesStartingWith(stale_prefix);
  ASSERT_THAT(stale, SizeIs(3)) << "the killed run left nothing to sweep";
  std::vector<pid_t> inside;
  for (const std::string& netns : stale) {
    for (pid_t pid : ProcessesInNetns(netns)) inside.push_back(pid);
  }
  ASSERT_THAT(inside, SizeIs(1)) << "the killed run's process in its host 0";
  const std::optional<ProcessRef> left_inside = ProcessRefOf(inside[0]);
  ASSERT_TRUE(left_inside.has_value());
  if (reap_owner_first) {
    FL_ASSERT_OK(owner->Wait(std::chrono::seconds(5)));
  }

  Result<std::unique_ptr<NetnsHosts>> next = NetnsHosts::Create(1);  // sweeps as it starts
  FL_ASSERT_OK(next);
  EXPECT_THAT(NamespacesStartingWith(stale_prefix), IsEmpty());
  EXPECT_FALSE(ProcessRunning(*left_inside)) << "the process left in the stale namespace still runs";
  EXPECT_THAT((*live)->Namespaces(), SizeIs(2)) << "the sweep removed a live owner's namespaces";
  EXPECT_THAT(NamespacesStartingWith((*next)->prefix()), SizeIs(2));
  if (!reap_owner_first) {
    FL_ASSERT_OK(owner->Wait(std::chrono::seconds(5)));
  }
}

INSTANTIATE_TEST_SUITE_P(Owner, SweepTest, testing::Values(true, false), [](const testing::TestParamInfo<bool>& info) {
  return info.param ? "Reaped" : "NotYetReaped";
});

// Drops the capabilities that network namespaces need (from this process and
// from anything it runs), then tries.
int CreateWithoutCapabilities(const std::vector<std::string>&) {
  for (int cap : {CAP_SYS_ADMIN, CAP_NET_ADMIN}) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  syscall(SYS_capget, &header, data);
  for (int cap : {CAP_SYS_ADMIN, CAP_NET_ADMIN}) {
    const uint32_t bit = 1u << (cap % 32);
    data[cap / 32].effective &= ~bit;
    data[cap / 32].permitted &= ~bit;
    data[cap / 32].inheritable &= ~bit;
  }
  syscall(SYS_capset, &header, data);
  Result<std::unique_ptr<NetnsHosts>> hosts = NetnsHosts::Create(2);
  ReportToParent(hosts.ok() ? "created" : hosts.status().ToString());
  return 0;
}
FL_REGISTER_CHILD("netns_without_capabilities", CreateWithoutCapabilities);

TEST(NetnsHostsTest, FailsWithTheReasonWhereNamespacesAreNotPermitted) {
  Result<ChildProcess> child = ChildProcess::Spawn("netns_without_capabilities", {});
  FL_ASSERT_OK(child);
  Result<ChildExit> ended = child->Wait(std::chrono::seconds(20));
  FL_ASSERT_OK(ended);
  ASSERT_TRUE(ended->succeeded()) << ended->Describe();
  const std::string& text = ended->transcript;
  EXPECT_EQ(
      text.rfind("failed_precondition: network namespaces are not permitted on this machine (`ip netns add flmh-", 0),
      0u)
      << text;
  EXPECT_THAT(text, HasSubstr("Operation not permitted"));
  const std::string tail =
      "): the multi-host tests need root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2; set "
      "FAULTLINE_SKIP_MULTIHOST=1 to skip them on purpose";
  EXPECT_EQ(text.substr(text.size() - std::min(text.size(), tail.size())), tail) << text;
}

}  // namespace
}  // namespace faultline
