// Implements LivenessMonitor over plain TCP sockets and one poll() thread.
#include "reference/distributed/liveness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <limits>
#include <locale>
#include <sstream>
#include <utility>

#include "reference/base/str_join.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kHeartbeat = 'H';
constexpr char kGoodbye = 'G';
constexpr char kFailed = 'F';
// The answer to a hello meant for another process (another pid or tag at
// this address), before the connection is closed: the connecting rank then
// names the address, not a death.
constexpr char kNotThisProcess = 'N';
// "FLH2": the hello with a tag (before: "FLHV", 12 bytes, no tag). Every
// field is in host byte order: the ranks of a job share one architecture.
constexpr uint32_t kHelloMagic = 0x464c4832;

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

std::string Seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", std::chrono::duration<double>(duration).count());
  return text;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

int MillisUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// Non-loopback IPv4 addresses of this host (network namespace).
std::vector<std::string> LocalIpv4() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const in_addr address = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr;
    if ((ntohl(address.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &address, text, sizeof(text));
    out.push_back(text);
  }
  freeifaddrs(list);
  return out;
}

// Sends exactly `size` bytes on a non-blocking socket by `deadline`.
Status SendAll(int fd, const void* data, size_t size, Clock::time_point deadline) {
  const char* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = send(fd, bytes + done, size - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return UnavailableError(Errno("send"));
    pollfd pfd{fd, POLLOUT, 0};
    const int ready = poll(&pfd, 1, MillisUntil(deadline));
    if (ready == 0) return UnavailableError("could not send the hello before the deadline");
    if (ready < 0 && errno != EINTR) return UnavailableError(Errno("poll"));
  }
  return OkStatus();
}

struct Connection {
  UniqueFd fd;     // non-blocking
  std::string ip;  // the address that answered
};

// Connects to `port` at whichever of `ips` answers first, by `deadline`;
// returns that socket and address. Every address is tried at once: one
// that drops packets (a network of the peer's that this host has a route
// to but cannot reach) would otherwise hold up the next until the
// deadline. On failure the error says how each address failed.
Result<Connection> ConnectToAny(const std::vector<std::string>& ips, int port, Clock::time_point deadline) {
  std::vector<std::string> errors;
  // Connections under way: pending[i] polls sockets[i], to pending_ips[i].
  // Those not returned close when this returns.
  std::vector<pollfd> pending;
  std::vector<UniqueFd> sockets;
  std::vector<std::string> pending_ips;
  auto failed = [&](const std::string& ip, int error) {
    errors.push_back("connect to " + ip + ":" + std::to_string(port) + ": " + std::strerror(error));
  };
  for (const std::string& ip : ips) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, ip.c_str(), &address.sin_addr) != 1) {
      errors.push_back("bad address '" + ip + "'");
      continue;
    }
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      errors.push_back(Errno("socket"));
      continue;
    }
    if (connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      return Connection{std::move(fd), ip};
    }
    if (errno != EINPROGRESS) {
      failed(ip, errno);
      continue;  // closes fd
    }
    pending.push_back({fd.get(), POLLOUT, 0});
    sockets.push_back(std::move(fd));
    pending_ips.push_back(ip);
  }
  while (!pending.empty()) {
    const int ready = poll(pending.data(), pending.size(), MillisUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {  // the deadline: what is still pending timed out (or poll failed: its error)
      const int error = ready == 0 ? ETIMEDOUT : errno;
      for (const std::string& ip : pending_ips) failed(ip, error);
      pending.clear();
      sockets.clear();
      break;
    }
    for (size_t i = 0; i < pending.size();) {
      if (pending[i].revents == 0) {
        ++i;
        continue;
      }
      int error = 0;
      socklen_t length = sizeof(error);
      if (getsockopt(pending[i].fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      if (error == 0) return Connection{std::move(sockets[i]), pending_ips[i]};
      failed(pending_ips[i], error);
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
      sockets.erase(sockets.begin() + static_cast<std::ptrdiff_t>(i));  // closes it
      pending_ips.erase(pending_ips.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (errors.empty()) return UnavailableError("it published no address");
  return UnavailableError(StrJoin(errors, "; "));
}

// A hello: the magic, the sender's rank, and the pid and tag of the process
// it means to reach.
struct Hello {
  uint32_t magic = 0;
  uint32_t from_rank = 0;
  uint32_t pid = 0;
  uint32_t tag_low = 0;
  uint32_t tag_high = 0;
};
static_assert(sizeof(Hello) == 20, "the hello is 20 bytes on the wire");

// A random tag for this monitor (never 0, which no published address has).
Result<uint64_t> DrawTag() {
  uint64_t tag = 0;
  while (tag == 0) {
    const ssize_t n = getrandom(&tag, sizeof(tag), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return UnavailableError(Errno("getrandom for the liveness tag"));
    if (n != static_cast<ssize_t>(sizeof(tag))) {
      return UnavailableError("getrandom for the liveness tag gave " + std::to_string(n) + " of 8 bytes");
    }
  }
  return tag;
}

}  // namespace

std::string PeerAddress::Serialize() const {
  std::ostringstream out;
  out.imbue(std::locale::classic());  // the host program's locale must not group the digits
  out << pid << " " << port << " " << host << " " << (ipv4.empty() ? "-" : StrJoin(ipv4, ",")) << " " << std::hex
      << std::setw(16) << std::setfill('0') << tag;
  return out.str();
}

Result<PeerAddress> PeerAddress::Parse(int rank, const std::string& text) {
  auto malformed = [&](const std::string& why) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " published a malformed liveness address '" + text +
                                "': " + why);
  };
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  long long pid = 0, port = 0;
  std::string host, addresses, tag, rest;
  if (!(in >> pid >> port >> host >> addresses >> tag)) {
    return malformed("expected 'PID PORT HOST IPV4[,IPV4...]|- TAG'");
  }
  if (in >> rest) return malformed("unexpected '" + rest + "' after the tag");
  if (pid < 1 || pid > std::numeric_limits<pid_t>::max()) {
    return malformed("pid is " + std::to_string(pid) + "; expected a pid >= 1");
  }
  if (port < 1 || port > 65535) return malformed("port is " + std::to_string(port) + "; expected 1-65535");
  PeerAddress peer;
  peer.rank = rank;
  peer.pid = static_cast<pid_t>(pid);
  peer.port = static_cast<int>(port);
  peer.host = host;  // never empty: the stream reads a word
  const bool sixteen_hex = tag.size() == 16 && tag.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (!sixteen_hex || tag == std::string(16, '0')) {
    return malformed("tag is '" + tag + "'; expected 16 lowercase hex digits, not all 0");
  }
  peer.tag = std::stoull(tag, nullptr, 16);
  if (addresses != "-") {
    std::istringstream list(addresses);
    for (std::string ip; std::getline(list, ip, ',');) peer.ipv4.push_back(ip);
  }
  return peer;
}

Result<PeerAddress> PeerAddress::ParseSlot(int rank, const char* slot, size_t size) {
  const size_t length = strnlen(slot, size);
  if (length == size) {
    return InvalidArgumentError("rank " + std::to_string(rank) + " published a liveness address that fills its " +
                                std::to_string(size) + "-byte slot with no terminating NUL; expected at most " +
                                std::to_string(size - 1) + " bytes");
  }
  return Parse(rank, std::string(slot, length));
}

Result<std::unique_ptr<LivenessMonitor>> LivenessMonitor::Listen(LivenessOptions options) {
  using std::chrono::milliseconds;
  const milliseconds timeout = options.timeout;
  if (options.heartbeat.count() == 0) options.heartbeat = std::clamp(timeout / 20, milliseconds(10), milliseconds(200));
  if (options.silence.count() == 0) options.silence = timeout / 2;
  if (options.stuck_grace.count() == 0)
    options.stuck_grace = std::clamp(timeout / 10, milliseconds(50), milliseconds(500));
  std::unique_ptr<LivenessMonitor> monitor(new LivenessMonitor(std::move(options)));

  monitor->listen_fd_.reset(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int listen_fd = monitor->listen_fd_.get();
  if (listen_fd < 0) return UnavailableError(Errno("liveness socket"));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t length = sizeof(address);
  if (bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(listen_fd, 256) != 0 ||
      getsockname(listen_fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return UnavailableError(Errno("liveness listener"));
  }
  monitor->wake_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!monitor->wake_fd_.valid()) return UnavailableError(Errno("eventfd"));

  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  monitor->self_.rank = monitor->options_.rank;
  monitor->self_.pid = getpid();
  monitor->self_.host = host;
  monitor->self_.port = ntohs(address.sin_port);
  monitor->self_.ipv4 = LocalIpv4();
  FL_ASSIGN_OR_RETURN(monitor->self_.tag, DrawTag());
  return monitor;
}

Status LivenessMonitor::Connect(const std::vector<PeerAddress>& peers, Clock::time_point deadline) {
  const Status connected = ConnectMesh(peers, deadline);
  if (!connected.ok()) {
    // A goodbye would tell the peers connected so far that this rank ended
    // normally: they would wait for it until their own limit and then blame
    // nobody ("every rank is running and reachable").
    AnnounceFailure();
    LeaveWithoutGoodbye();
  }
  return connected;
}

Status LivenessMonitor::ConnectMesh(const std::vector<PeerAddress>& peers, Clock::time_point deadline) {
  const int rank = options_.rank;
  peers_.resize(peers.size());
  for (size_t r = 0; r < peers.size(); ++r) peers_[r].address = peers[r];
  // Higher ranks: connect and say hello (my rank, and the pid and tag I expect there).
  for (size_t r = rank + 1; r < peers.size(); ++r) {
    const PeerAddress& peer = peers[r];
    const std::vector<std::string> candidates =
        peer.host == self_.host ? std::vector<std::string>{"127.0.0.1"} : peer.ipv4;
    Result<Connection> connection = ConnectToAny(candidates, peer.port, deadline);
    if (!connection.ok()) {
      return UnavailableError("mpi rank " + std::to_string(rank) + ": cannot open the liveness connection to " +
                              Name(static_cast<int>(r)) + ": " + connection.status().message());
    }
    peers_[r].fd = std::move(connection->fd);
    peers_[r].reached = connection->ip + ":" + std::to_string(peer.port);
    Hello hello{kHelloMagic, static_cast<uint32_t>(rank), static_cast<uint32_t>(peer.pid),
                static_cast<uint32_t>(peer.tag), static_cast<uint32_t>(peer.tag >> 32)};
    FL_RETURN_IF_ERROR(
        SendAll(peers_[r].fd.get(), &hello, sizeof(hello), deadline)
            .WithContext("mpi rank " + std::to_string(rank) + ": liveness hello to " + Name(static_cast<int>(r))));
  }
  // Lower ranks: accept until each has said hello.
  FL_RETURN_IF_ERROR(AcceptHellos(deadline));
  listen_fd_.reset();
  const Clock::time_point now = Clock::now();
  for (Peer& peer : peers_) peer.last_heard = now;
  thread_ = std::thread([this] { Run(); });
  return OkStatus();
}

Status LivenessMonitor::AcceptHellos(Clock::time_point deadline) {
  const int rank = options_.rank;
  auto missing = [&] {
    std::vector<std::string> names;
    for (int r = 0; r < rank; ++r) {
      if (!peers_[r].fd.valid()) names.push_back(Name(r));
    }
    return StrJoin(names, ", ");
  };
  // Connections accepted whose hello has not all come. They are read side
  // by side with the listener: one that sends less than a hello, or
  // nothing (a port scanner, a health check, a stale rank of an older
  // build), must not hold up the peers queued behind it until the deadline.
  // At most kMaxPending are kept, the oldest closed first: a peer's hello
  // comes with its connection, so the oldest are the ones that say nothing,
  // and a flood of them must not take every descriptor. Those still
  // pending close when this returns.
  constexpr size_t kMaxPending = 256;
  struct Pending {
    UniqueFd fd;
    Hello hello;
    size_t got = 0;
  };
  std::vector<Pending> pending;
  // Keeps a whole hello's connection when it is meant for this process
  // and comes from a lower rank not yet connected; else closes it, first
  // refusing a hello meant for another process.
  auto take = [&](UniqueFd fd, const Hello& hello) {
    const int from = static_cast<int>(hello.from_rank);
    const uint64_t tag = (static_cast<uint64_t>(hello.tag_high) << 32) | hello.tag_low;
    const bool a_hello = hello.magic == kHelloMagic;
    const bool for_me = a_hello && static_cast<pid_t>(hello.pid) == self_.pid && tag == self_.tag;
    if (a_hello && !for_me) (void)!send(fd.get(), &kNotThisProcess, 1, MSG_NOSIGNAL | MSG_DONTWAIT);  // then closed
    if (!for_me || from < 0 || from >= rank || peers_[from].fd.valid()) {
      return false;  // not a peer of this job (or a duplicate): closing fd ignores it
    }
    peers_[from].fd = std::move(fd);
    return true;
  };
  auto no_connection = [&] {
    pending.clear();
    return UnavailableError("mpi rank " + std::to_string(rank) + ": no liveness connection from " + missing() +
                            " before the deadline");
  };
  for (int accepted = 0; accepted < rank;) {
    // A stream of connections keeps poll ready: the deadline must end it.
    if (Clock::now() >= deadline) return no_connection();
    std::vector<pollfd> fds{{listen_fd_.get(), POLLIN, 0}};
    for (const Pending& p : pending) fds.push_back({p.fd.get(), POLLIN, 0});
    const int ready = poll(fds.data(), fds.size(), MillisUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return no_connection();
    // Read the hellos first (fds[i + 1] is pending[i]); those still short stay.
    std::vector<Pending> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (fds[i + 1].revents == 0) {
        still.push_back(std::move(p));
        continue;
      }
      const ssize_t n =
          recv(p.fd.get(), reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        still.push_back(std::move(p));
        continue;
      }
      if (n <= 0) {  // closed or failed before a whole hello: not a peer
        p.fd.reset();
        continue;
      }
      p.got += static_cast<size_t>(n);
      if (p.got < sizeof(Hello)) {
        still.push_back(std::move(p));
      } else if (take(std::move(p.fd), p.hello)) {
        ++accepted;
      }
    }
    pending = std::move(still);
    if (accepted >= rank) break;  // every peer is here: a connection still queued is not one
    if (fds[0].revents == 0) continue;
    UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      const int accept_errno = errno;
      // Out of descriptors or memory: it would recur at every poll until
      // the deadline, and then read as a peer that never came. Anything
      // else (a connection gone before it was accepted; the network errors
      // Linux passes on through accept(2), which it says to retry): wait
      // again.
      if (accept_errno != EMFILE && accept_errno != ENFILE && accept_errno != ENOBUFS && accept_errno != ENOMEM) {
        continue;
      }
      pending.clear();
      return UnavailableError("mpi rank " + std::to_string(rank) + ": cannot accept the liveness connection of " +
                              missing() + ": accept: " + std::strerror(accept_errno));
    }
    if (pending.size() == kMaxPending) pending.erase(pending.begin());  // closes the oldest
    pending.push_back({std::move(fd), Hello{}});
  }
  pending.clear();
  return OkStatus();
}

LivenessMonitor::~LivenessMonitor() {
  if (thread_.joinable()) {
    stop_ = true;
    const uint64_t one = 1;
    (void)!write(wake_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  if (say_goodbye_) SendHeartbeats(kGoodbye);
  // Closed after the goodbye: a peer reads it, then end of file.
  for (Peer& peer : peers_) peer.fd.reset();
  listen_fd_.reset();
  wake_fd_.reset();
}

std::string LivenessMonitor::Name(int peer) const {
  if (peer < 0 || peer >= static_cast<int>(peers_.size())) return "rank " + std::to_string(peer);
  const PeerAddress& a = peers_[peer].address;
  return "rank " + std::to_string(peer) + " (pid " + std::to_string(a.pid) + " on host " + a.host + ")";
}

void LivenessMonitor::SendHeartbeats(char byte) {
  std::lock_guard<std::mutex> lock(mu_);  // the monitor thread may be closing a connection
  for (size_t r = 0; r < peers_.size(); ++r) {
    Peer& peer = peers_[r];
    if (!peer.fd.valid() || static_cast<int>(r) == options_.rank) continue;
    // A full send buffer (a silent peer) drops the byte: silence is measured on the other side.
    (void)!send(peer.fd.get(), &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
}

void LivenessMonitor::AnnounceFailure() {
  if (!failure_announced_.exchange(true)) SendHeartbeats(kFailed);
}

bool LivenessMonitor::ReadFromLocked(Peer& peer, Clock::time_point now) {
  char buffer[256];
  for (;;) {
    const ssize_t n = recv(peer.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      peer.last_heard = now;
      const bool goodbye = std::memchr(buffer, kGoodbye, static_cast<size_t>(n)) != nullptr;
      const bool failed = std::memchr(buffer, kFailed, static_cast<size_t>(n)) != nullptr;
      switch (peer.state) {
        case PeerState::kUnheard:
          // A refusal is the first byte on a connection this rank opened; never a later one.
          if (!peer.reached.empty() && buffer[0] == kNotThisProcess) {
            peer.state = PeerState::kRefusedHello;
            break;
          }
          [[fallthrough]];
        case PeerState::kHeard:
          peer.state = goodbye ? PeerState::kSaidGoodbye : failed ? PeerState::kAnnouncedFailure : PeerState::kHeard;
          break;
        case PeerState::kAnnouncedFailure:
          if (goodbye) peer.state = PeerState::kSaidGoodbye;
          break;
        case PeerState::kRefusedHello:  // another process's bytes say nothing of the peer
        case PeerState::kSaidGoodbye:
        case PeerState::kDied:  // the closed states have no connection to read
        case PeerState::kLeftAfterFailure:
        case PeerState::kNeverReached: break;
      }
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n < 0 && errno == EINTR) continue;
    // Closed (0) or reset: a peer that said goodbye ended normally; any other died.
    peer.fd.reset();
    switch (peer.state) {
      case PeerState::kUnheard:
      case PeerState::kHeard: peer.state = PeerState::kDied; break;
      case PeerState::kAnnouncedFailure: peer.state = PeerState::kLeftAfterFailure; break;
      case PeerState::kRefusedHello: peer.state = PeerState::kNeverReached; break;
      case PeerState::kSaidGoodbye:
      case PeerState::kDied:  // already closed (not read again)
      case PeerState::kLeftAfterFailure:
      case PeerState::kNeverReached: return false;
    }
    peer.closed_at = now;
    ++dead_count_;
    return true;
  }
}

void LivenessMonitor::ReadReadyPeersLocked(Clock::time_point now) {
  bool a_failed_peer_left = false;
  for (Peer& peer : peers_) {  // recv does not wait: a peer with nothing to read answers EAGAIN
    if (!peer.fd.valid() || !ReadFromLocked(peer, now)) continue;
    switch (peer.state) {
      case PeerState::kLeftAfterFailure: a_failed_peer_left = true; break;
      case PeerState::kDied:
      case PeerState::kNeverReached:
      case PeerState::kUnheard:  // connected: ReadFromLocked returned false
      case PeerState::kHeard:
      case PeerState::kAnnouncedFailure:
      case PeerState::kRefusedHello:
      case PeerState::kSaidGoodbye: break;
    }
  }
  // A peer that failed usually failed because another one died first, and
  // that death may already be waiting on another socket: read it before
  // anyone is told, so that the dead rank is named rather than the one that
  // noticed it (seen on 2 cores: rank 0 blamed rank 1 for rank 2's death).
  if (a_failed_peer_left) ReadReadyPeersLocked(now);
}

void LivenessMonitor::Run() {
  Clock::time_point next_heartbeat = Clock::now();
  std::vector<pollfd> fds;
  while (!stop_) {
    const Clock::time_point now = Clock::now();
    if (now >= next_heartbeat) {
      SendHeartbeats(kHeartbeat);
      next_heartbeat = now + options_.heartbeat;
    }
    // The watchdog: a call still inside MPI past its deadline, or stuck_grace after its peer died.
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (op_.active && !claimed_ && in_call_) {
        const bool timed_out = now >= op_.deadline;
        bool abandon = timed_out;
        if (!abandon) {
          const Clock::time_point call_started{std::chrono::nanoseconds(call_started_ns_.load())};
          for (int dead : DeadPeersLocked(op_.target)) {
            if (now - std::max(call_started, peers_[dead].closed_at) >= options_.stuck_grace) abandon = true;
          }
        }
        if (abandon) {
          claimed_ = true;
          Status error = ErrorLocked(DiagnoseLocked(timed_out, now));
          if (!op_.context.empty()) error = error.WithContext(op_.context);
          lock.unlock();
          AnnounceFailure();
          if (options_.on_abandon) options_.on_abandon(error);
          _exit(1);
        }
      }
    }
    fds.clear();
    fds.push_back({wake_fd_.get(), POLLIN, 0});
    for (const Peer& peer : peers_) {
      if (peer.fd.valid()) fds.push_back({peer.fd.get(), POLLIN, 0});
    }
    Clock::time_point wake = next_heartbeat;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (op_.active) wake = std::min(wake, op_.deadline);
    }
    const int ready = poll(fds.data(), fds.size(), std::max(1, MillisUntil(wake)));
    if (ready <= 0) continue;
    // Everything that arrived is read under one lock, so that a caller sees
    // all of it at once, never one closed connection without the next.
    std::lock_guard<std::mutex> lock(mu_);
    ReadReadyPeersLocked(Clock::now());
    changed_.notify_all();
  }
}

std::vector<int> LivenessMonitor::DeadPeersLocked(int target) const {
  std::vector<int> dead;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (target >= 0 && target != static_cast<int>(r)) continue;
    switch (peers_[r].state) {
      case PeerState::kDied:
      case PeerState::kLeftAfterFailure:
      case PeerState::kNeverReached: dead.push_back(static_cast<int>(r)); break;
      case PeerState::kUnheard:
      case PeerState::kHeard:
      case PeerState::kAnnouncedFailure:
      case PeerState::kRefusedHello:
      case PeerState::kSaidGoodbye: break;
    }
  }
  return dead;
}

std::vector<int> LivenessMonitor::SilentPeersLocked(int target, Clock::time_point now) const {
  std::vector<int> silent;
  for (size_t r = 0; r < peers_.size(); ++r) {
    if (static_cast<int>(r) == options_.rank) continue;
    if (target >= 0 && target != static_cast<int>(r)) continue;
    switch (peers_[r].state) {
      case PeerState::kUnheard:  // still connected, and not ending
      case PeerState::kHeard:
      case PeerState::kAnnouncedFailure:
      case PeerState::kRefusedHello:
        if (now - peers_[r].last_heard > options_.silence) silent.push_back(static_cast<int>(r));
        break;
      case PeerState::kSaidGoodbye:
      case PeerState::kDied:
      case PeerState::kLeftAfterFailure:
      case PeerState::kNeverReached: break;
    }
  }
  return silent;
}

std::vector<std::string> LivenessMonitor::CausesLocked(int target, bool silent_too, Clock::time_point now) const {
  // Peers that died are the cause; peers that left after a failure of their
  // own (they said so) are named only when no peer died, and only
  // stuck_grace after they left (or at the deadline): their failure was
  // usually another peer's death, whose closed connection may reach this
  // rank a little later than theirs (seen on 2 busy cores).
  std::vector<std::string> died, failed;
  for (int r : DeadPeersLocked(target)) {
    switch (peers_[r].state) {
      case PeerState::kNeverReached:
        died.push_back(Name(r) + " was never reached: the process at " + peers_[r].reached +
                       " is another one (it refused a hello meant for that pid and tag)");
        break;
      case PeerState::kDied: died.push_back(Name(r) + " is no longer running"); break;
      case PeerState::kLeftAfterFailure:
        if (now - peers_[r].closed_at >= options_.stuck_grace || now >= op_.deadline) {
          failed.push_back(Name(r) + " stopped after a failure of its own");
        }
        break;
      case PeerState::kUnheard:  // not dead: DeadPeersLocked returns none of these
      case PeerState::kHeard:
      case PeerState::kAnnouncedFailure:
      case PeerState::kRefusedHello:
      case PeerState::kSaidGoodbye: break;
    }
  }
  std::vector<std::string> causes = died.empty() ? failed : died;
  if (!silent_too) return causes;
  for (int r : SilentPeersLocked(target, now)) {
    causes.push_back(Name(r) + " is unreachable (nothing heard from it for over " + Seconds(options_.silence) + " s)");
  }
  return causes;
}

std::string LivenessMonitor::DiagnoseLocked(bool timed_out, Clock::time_point now) const {
  if (!timed_out) {
    const std::vector<std::string> causes = CausesLocked(op_.target, false, now);
    return causes.empty() ? "" : op_.what + " failed: " + StrJoin(causes, "; ");
  }
  // At the deadline: the target when it is to blame, else every peer that is.
  std::vector<std::string> causes = CausesLocked(op_.target, true, now);
  if (causes.empty() && op_.target >= 0) causes = CausesLocked(-1, true, now);
  std::string why = StrJoin(causes, "; ");
  if (why.empty()) {
    why = op_.target >= 0 ? Name(op_.target) + " is running and reachable but has not answered"
                          : "every rank is running and reachable: one of them has not reached this call";
  }
  return op_.what + " did not complete within " + Seconds(op_.limit) + " s: " + why;
}

Status LivenessMonitor::ErrorLocked(const std::string& message) const {
  return UnavailableError("mpi rank " + std::to_string(options_.rank) + ": " + message);
}

bool LivenessMonitor::ClaimLocked() {
  if (claimed_) return false;
  claimed_ = true;
  return true;
}

void LivenessMonitor::WaitForTheWatchdog() {
  for (;;) pause();  // the watchdog is reporting and ends the process
}

void LivenessMonitor::BeginOp(std::string what, std::string context, int target, std::chrono::milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  std::lock_guard<std::mutex> lock(mu_);
  op_ = Op{true, std::move(what), std::move(context), target, limit, deadline};
  deadline_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
}

void LivenessMonitor::EndOp() {
  std::lock_guard<std::mutex> lock(mu_);
  op_.active = false;
}

Status LivenessMonitor::CheckOp() {
  if (dead_count_.load() == 0 && NowNs() < deadline_ns_.load()) return OkStatus();  // the common case, lock-free
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = Clock::now();
  const std::string why = DiagnoseLocked(now >= op_.deadline, now);
  if (why.empty()) return OkStatus();
  if (!ClaimLocked()) WaitForTheWatchdog();
  return ErrorLocked(why);
}

Status LivenessMonitor::FailOp(const std::string& mpi_error) {
  std::unique_lock<std::mutex> lock(mu_);
  // A dead peer shows at once, an unreachable one after `silence`: past
  // that (or the operation's deadline) no peer is to blame.
  const Clock::time_point give_up = std::min(op_.deadline, Clock::now() + options_.silence + options_.heartbeat);
  for (;;) {
    const Clock::time_point now = Clock::now();
    std::vector<std::string> causes = CausesLocked(op_.target, true, now);
    if (causes.empty() && op_.target >= 0) causes = CausesLocked(-1, true, now);
    std::string why;
    if (!causes.empty()) {
      why = op_.what + " failed: " + StrJoin(causes, "; ");
    } else if (now >= give_up) {
      why = op_.what + " failed: " + mpi_error;  // no peer to blame
    }
    if (!why.empty()) {
      if (!ClaimLocked()) WaitForTheWatchdog();
      return ErrorLocked(why);
    }
    changed_.wait_for(lock, options_.heartbeat);
  }
}

LivenessMonitor::CallGuard::CallGuard(LivenessMonitor* monitor) : monitor_(monitor) {
  if (monitor_ == nullptr) return;
  monitor_->call_started_ns_ = NowNs();
  monitor_->in_call_ = true;
}

LivenessMonitor::CallGuard::~CallGuard() {
  if (monitor_ != nullptr) monitor_->in_call_ = false;
}

}  // namespace faultline
