// LivenessMonitor on its own: three monitors in this process stand for
// three ranks (same pid, same host, connected over 127.0.0.1), and a rank
// "dies" when its monitor closes its connections without a goodbye.
#include "reference/distributed/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;

// `ranks` monitors listening, not yet connected, and their addresses
// (empty when one could not listen). `stuck_grace` 0 takes the default.
std::vector<std::unique_ptr<LivenessMonitor>> ListeningRanks(int ranks, std::chrono::milliseconds timeout,
                                                             std::vector<PeerAddress>* addresses,
                                                             std::chrono::milliseconds stuck_grace = {}) {
  std::vector<std::unique_ptr<LivenessMonitor>> monitors;
  for (int r = 0; r < ranks; ++r) {
    LivenessOptions options;
    options.rank = r;
    options.timeout = timeout;
    options.stuck_grace = stuck_grace;
    Result<std::unique_ptr<LivenessMonitor>> monitor = LivenessMonitor::Listen(options);
    FL_EXPECT_OK(monitor);
    if (!monitor.ok()) return {};
    addresses->push_back((*monitor)->self());
    monitors.push_back(std::move(*monitor));
  }
  return monitors;
}

std::vector<std::unique_ptr<LivenessMonitor>> ConnectedRanks(int ranks, std::chrono::milliseconds timeout,
                                                             std::chrono::milliseconds stuck_grace = {}) {
  std::vector<PeerAddress> addresses;
  std::vector<std::unique_ptr<LivenessMonitor>> monitors = ListeningRanks(ranks, timeout, &addresses, stuck_grace);
  if (monitors.empty()) return {};
  // Every rank connects at once, as the ranks of a job do.
  std::vector<Status> results(ranks);
  std::vector<std::thread> threads;
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] { results[r] = monitors[r]->Connect(addresses, deadline); });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : results) FL_EXPECT_OK(s);
  return monitors;
}

// Waits (on CheckOp, as the transport does between MPI calls) for rank 0's
// current operation to fail.
Status FirstFailure(LivenessMonitor& monitor) {
  for (;;) {
    Status status = monitor.CheckOp();
    if (!status.ok()) return status;
    std::this_thread::yield();
  }
}

void Die(std::unique_ptr<LivenessMonitor>& rank) {
  rank->LeaveWithoutGoodbye();
  rank.reset();
}

void FailAndLeave(std::unique_ptr<LivenessMonitor>& rank) {
  rank->AnnounceFailure();
  Die(rank);
}

// Rank 2 dies and rank 1, which noticed, fails and leaves, in either order
// as rank 0 sees them; 20 rounds. Rank 0 must name rank 2, the cause. The
// grace is long (10 s) so that however long this thread is held between
// the two events on a loaded machine, the death still comes within it; it
// costs nothing when the death arrives (rank 0 decides at once).
void ExpectRank0NamesRank2(bool death_arrives_first) {
  for (int round = 0; round < 20; ++round) {
    std::vector<std::unique_ptr<LivenessMonitor>> ranks =
        ConnectedRanks(3, std::chrono::seconds(20), std::chrono::seconds(10));
    ASSERT_EQ(ranks.size(), 3u);
    ranks[0]->BeginOp("barrier", "", -1, std::chrono::seconds(20));
    const std::string rank2 = ranks[0]->Name(2);
    if (death_arrives_first) {
      Die(ranks[2]);
      FailAndLeave(ranks[1]);
    } else {
      FailAndLeave(ranks[1]);
      Die(ranks[2]);
    }
    const Status failure = FirstFailure(*ranks[0]);
    ASSERT_EQ(failure.ToString(), "unavailable: mpi rank 0: barrier failed: " + rank2 + " is no longer running")
        << "round " << round;
    ranks[0]->EndOp();
  }
}

// Both connections close at about the same time; rank 0 must not blame
// rank 1 (seen on a busy machine before every ready peer was read under one
// lock).
TEST(LivenessMonitorTest, NamesTheRankThatDiedNotTheOneThatFailedBecauseOfIt) { ExpectRank0NamesRank2(true); }

// Rank 1's failure reaches rank 0 before rank 2's death does (another host,
// or a busy one): rank 0 waits stuck_grace before it blames a rank that
// failed.
TEST(LivenessMonitorTest, NamesTheRankThatDiedWhenItsDeathArrivesSecond) { ExpectRank0NamesRank2(false); }

// A rank that failed on its own (nobody died) is named as such.
TEST(LivenessMonitorTest, NamesARankThatFailedOnItsOwn) {
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ConnectedRanks(3, std::chrono::seconds(20));
  ASSERT_EQ(ranks.size(), 3u);
  ranks[0]->BeginOp("barrier", "", -1, std::chrono::seconds(20));
  const std::string rank1 = ranks[0]->Name(1);
  FailAndLeave(ranks[1]);
  EXPECT_EQ(FirstFailure(*ranks[0]).ToString(),
            "unavailable: mpi rank 0: barrier failed: " + rank1 + " stopped after a failure of its own");
  ranks[0]->EndOp();
}

// A rank that ends normally says goodbye: nobody takes it for a failure.
// The monitors' timeout is long (silence 10 s), so that however late rank
// 0's monitor thread reads the goodbye, rank 1 never reads as silent; the
// operation's own limit is 1 s.
TEST(LivenessMonitorTest, AGoodbyeIsNotAFailure) {
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ConnectedRanks(2, std::chrono::seconds(20));
  ASSERT_EQ(ranks.size(), 2u);
  ranks[1].reset();
  ranks[0]->BeginOp("barrier", "", -1, std::chrono::seconds(1));
  EXPECT_EQ(FirstFailure(*ranks[0]).ToString(),
            "unavailable: mpi rank 0: barrier did not complete within 1 s: every rank is running and reachable: "
            "one of them has not reached this call");
  ranks[0]->EndOp();
}

// An MPI call that returns an error with every peer alive and heard from:
// after `silence` (and a heartbeat) no peer can be to blame, so the error is
// MPI's own, long before a setup-length deadline.
TEST(LivenessMonitorTest, AnMpiErrorWithNobodyToBlameComesAfterSilenceNotAtTheDeadline) {
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ConnectedRanks(2, std::chrono::seconds(2));  // silence 1 s
  ASSERT_EQ(ranks.size(), 2u);
  ranks[0]->BeginOp("allocating the window of 'feat'", "", -1, std::chrono::seconds(120));
  const Clock::time_point start = Clock::now();
  const Status failure = ranks[0]->FailOp("MPI_Win_allocate: out of memory");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(failure.ToString(),
            "unavailable: mpi rank 0: allocating the window of 'feat' failed: MPI_Win_allocate: out of memory");
  EXPECT_GE(seconds, 1.0);   // it waited for a silent peer to show
  EXPECT_LT(seconds, 60.0);  // and not for the deadline
  ranks[0]->EndOp();
}

// Rank 0 connects to ranks 1 and 2 (their listeners queue the
// connections), so it has joined; rank 2 accepts it, then gives up waiting
// for rank 1, which never connects. Rank 2 goes (as MpiTransport::Create
// fails and destroys it): rank 0 must see a rank that failed, not one that
// said goodbye. Before, rank 2's monitor said goodbye, and rank 0 waited
// until its deadline and blamed nobody.
TEST(LivenessMonitorTest, ARankThatFailsToConnectIsAFailureToThePeersItReached) {
  std::vector<PeerAddress> addresses;
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ListeningRanks(3, std::chrono::seconds(20), &addresses);
  ASSERT_EQ(ranks.size(), 3u);
  FL_ASSERT_OK(ranks[0]->Connect(addresses, Clock::now() + std::chrono::seconds(20)));
  const std::string rank1 = "rank 1 (pid " + std::to_string(addresses[1].pid) + " on host " + addresses[1].host + ")";
  EXPECT_EQ(ranks[2]->Connect(addresses, Clock::now() + std::chrono::milliseconds(200)).ToString(),
            "unavailable: mpi rank 2: no liveness connection from " + rank1 + " before the deadline");
  const std::string rank2 = ranks[0]->Name(2);
  ranks[0]->BeginOp("barrier", "", -1, std::chrono::seconds(20));
  ranks[2].reset();
  EXPECT_EQ(FirstFailure(*ranks[0]).ToString(),
            "unavailable: mpi rank 0: barrier failed: " + rank2 + " stopped after a failure of its own");
  ranks[0]->EndOp();
}

// Rank 0 is told a pid or tag for rank 1 that is not that of the process
// at rank 1's address (a stale address, or another job's rank listening
// there). That process refuses the hello and says so before it closes the
// connection: rank 0 names the address it reached, not a death. Before,
// rank 0 read the closed connection as "rank 1 ... is no longer running".
void ExpectTheHelloRefused(const std::function<void(PeerAddress&)>& change) {
  std::vector<PeerAddress> addresses;
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ListeningRanks(2, std::chrono::seconds(20), &addresses);
  ASSERT_EQ(ranks.size(), 2u);
  std::vector<PeerAddress> told = addresses;
  change(told[1]);  // not the process listening there
  // Rank 0 has joined once its hello waits at rank 1's listener.
  FL_ASSERT_OK(ranks[0]->Connect(told, Clock::now() + std::chrono::seconds(20)));
  // Rank 1 takes that hello, refuses it, and then waits in vain for one meant for it.
  const std::string rank0 = "rank 0 (pid " + std::to_string(addresses[0].pid) + " on host " + addresses[0].host + ")";
  EXPECT_EQ(ranks[1]->Connect(addresses, Clock::now() + std::chrono::milliseconds(200)).ToString(),
            "unavailable: mpi rank 1: no liveness connection from " + rank0 + " before the deadline");
  ranks[0]->BeginOp("barrier", "", -1, std::chrono::seconds(20));
  EXPECT_EQ(FirstFailure(*ranks[0]).ToString(), "unavailable: mpi rank 0: barrier failed: " + ranks[0]->Name(1) +
                                                    " was never reached: the process at " +
                                                    "127.0.0.1:" + std::to_string(addresses[1].port) +
                                                    " is another one (it refused a hello meant for that pid and tag)");
  ranks[0]->EndOp();
}

TEST(LivenessMonitorTest, AHelloThatReachesAnotherPidIsNamedAsSuch) {
  ExpectTheHelloRefused([](PeerAddress& peer) { peer.pid += 1; });
}

// The same pid, another process: a rank of another job in a pid namespace
// of its own (containers give each rank the same small pids). Before the
// tag, the hello named only a pid, and this process took it.
TEST(LivenessMonitorTest, AHelloThatReachesAnotherProcessWithTheSamePidIsNamedAsSuch) {
  ExpectTheHelloRefused([](PeerAddress& peer) { peer.tag ^= 1; });
}

// Connections at rank 1's listener, queued before rank 0's: one that sends
// part of a hello (3 bytes) and stays open, one that sends nothing. Rank 1
// must take rank 0's hello at once. Before, it read each accepted
// connection's hello until the join deadline before it accepted the next,
// so these two held the join until the deadline: a rank joined a whole join
// limit late, and failed when a peer came after it. The bound below is
// half the deadline: what this checks is that the deadline is not waited
// for, not how fast a join is.
TEST(LivenessMonitorTest, ConnectionsThatSayNoHelloDoNotHoldUpTheJoin) {
  std::vector<PeerAddress> addresses;
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ListeningRanks(2, std::chrono::seconds(20), &addresses);
  ASSERT_EQ(ranks.size(), 2u);
  std::vector<int> strangers;
  for (const std::string& says : {std::string("FLH"), std::string()}) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(addresses[1].port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
    ASSERT_EQ(send(fd, says.data(), says.size(), MSG_NOSIGNAL), static_cast<ssize_t>(says.size()));
    strangers.push_back(fd);
  }
  FL_ASSERT_OK(ranks[0]->Connect(addresses, Clock::now() + std::chrono::seconds(20)));
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(ranks[1]->Connect(addresses, start + std::chrono::seconds(20)).ToString(), "ok");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10)) << "the strangers held up the join";
  for (int fd : strangers) close(fd);
}

// Raises the soft limit on open files back when it goes out of scope.
struct FileLimit {
  explicit FileLimit(rlim_t limit) {
    getrlimit(RLIMIT_NOFILE, &saved);
    rlimit lowered = saved;
    lowered.rlim_cur = limit;
    setrlimit(RLIMIT_NOFILE, &lowered);
  }
  ~FileLimit() { setrlimit(RLIMIT_NOFILE, &saved); }
  rlimit saved{};
};

// Out of descriptors, accepting a peer's connection fails at once and says
// why. Before, the listener stayed readable, accept4 failed at every poll
// until the deadline, and the error blamed the peer ("no liveness
// connection from rank 0 ... before the deadline").
TEST(LivenessMonitorTest, AcceptingWithNoDescriptorLeftFailsAtOnceAndSaysWhy) {
  std::vector<PeerAddress> addresses;
  std::vector<std::unique_ptr<LivenessMonitor>> ranks = ListeningRanks(2, std::chrono::seconds(20), &addresses);
  ASSERT_EQ(ranks.size(), 2u);
  FL_ASSERT_OK(ranks[0]->Connect(addresses, Clock::now() + std::chrono::seconds(20)));  // queued at rank 1
  const int lowest_free = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(lowest_free, 0) << std::strerror(errno);
  close(lowest_free);
  Status accepted;
  {
    const FileLimit limit(static_cast<rlim_t>(lowest_free));  // no descriptor left
    accepted = ranks[1]->Connect(addresses, Clock::now() + std::chrono::seconds(20));
  }
  EXPECT_EQ(accepted.ToString(), "unavailable: mpi rank 1: cannot accept the liveness connection of " +
                                     ranks[1]->Name(0) + ": accept: Too many open files");
}

TEST(PeerAddressTest, ParsesAPublishedAddress) {
  Result<PeerAddress> peer = PeerAddress::Parse(3, "4242 8080 fl-host1 10.77.0.2,10.0.0.9 00000000cafef00d");
  FL_ASSERT_OK(peer);
  EXPECT_EQ(peer->rank, 3);
  EXPECT_EQ(peer->pid, 4242);
  EXPECT_EQ(peer->port, 8080);
  EXPECT_EQ(peer->host, "fl-host1");
  EXPECT_EQ(peer->ipv4, (std::vector<std::string>{"10.77.0.2", "10.0.0.9"}));
  EXPECT_EQ(peer->tag, 0xcafef00dULL);
  peer = PeerAddress::Parse(0, "1 65535 h - ffffffffffffffff");
  FL_ASSERT_OK(peer);
  EXPECT_TRUE(peer->ipv4.empty());
  EXPECT_EQ(peer->tag, ~0ULL);
}

TEST(PeerAddressTest, SerializeAndParseRoundTrip) {
  PeerAddress address;
  address.pid = 7;
  address.port = 40000;
  address.host = "h";
  address.ipv4 = {"10.0.0.1"};
  address.tag = 0x1f;
  EXPECT_EQ(address.Serialize(), "7 40000 h 10.0.0.1 000000000000001f");
  Result<PeerAddress> back = PeerAddress::Parse(2, address.Serialize());
  FL_ASSERT_OK(back);
  EXPECT_EQ(back->tag, address.tag);
  EXPECT_EQ(back->ipv4, address.ipv4);
}

// Before, any number was taken: a pid of 0 named "pid 0" in every error,
// and a port of 0 or past 65535 was connected to as whatever it wrapped to.
TEST(PeerAddressTest, RefusesAMalformedAddressNamingTheRankAndWhatIsWrong) {
  const std::string prefix = "invalid_argument: rank 3 published a malformed liveness address '";
  const std::string expected = "expected 'PID PORT HOST IPV4[,IPV4...]|- TAG'";
  const std::string bad_tag = "'; expected 16 lowercase hex digits, not all 0";
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"0 8080 h - 00000000cafef00d", "pid is 0; expected a pid >= 1"},
           {"-7 8080 h - 00000000cafef00d", "pid is -7; expected a pid >= 1"},
           {"4242 0 h - 00000000cafef00d", "port is 0; expected 1-65535"},
           {"4242 65536 h - 00000000cafef00d", "port is 65536; expected 1-65535"},
           {"4242 8080 h", expected},
           {"4242 8080 h -", expected},  // an address without a tag (before the tag)
           {"", expected},
           {"4242 8080 h - 00000000cafef00d more", "unexpected 'more' after the tag"},
           {"4242 8080 h - cafef00d", "tag is 'cafef00d" + bad_tag},
           {"4242 8080 h - 00000000CAFEF00D", "tag is '00000000CAFEF00D" + bad_tag},
           {"4242 8080 h - 00000000cafef00g", "tag is '00000000cafef00g" + bad_tag},
           {"4242 8080 h - 0000000000000000", "tag is '0000000000000000" + bad_tag},
       }) {
    EXPECT_EQ(PeerAddress::Parse(3, text).status().ToString(), prefix + text + "': " + why);
  }
}

// A rank's slot in the address exchange is 512 bytes; one that holds no NUL
// is refused, and nothing past the slot is read (before: std::string(slot)
// read on into the next rank's slot, or past the buffer for the last one).
TEST(PeerAddressTest, ASlotWithNoTerminatingNulIsRefusedAndNothingPastItIsRead) {
  std::vector<char> slot(512, '7');  // its own allocation: ASan catches a read past it
  EXPECT_EQ(PeerAddress::ParseSlot(2, slot.data(), slot.size()).status().ToString(),
            "invalid_argument: rank 2 published a liveness address that fills its 512-byte slot with no "
            "terminating NUL; expected at most 511 bytes");
  const std::string text = "4242 8080 h - 00000000cafef00d";
  std::copy(text.begin(), text.end(), slot.begin());
  slot[text.size()] = '\0';  // what follows the NUL is not read
  Result<PeerAddress> peer = PeerAddress::ParseSlot(2, slot.data(), slot.size());
  FL_ASSERT_OK(peer);
  EXPECT_EQ(peer->pid, 4242);
}

}  // namespace
}  // namespace faultline
