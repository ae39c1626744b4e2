// Provides LivenessMonitor: who of an MPI job's ranks is still there, learned
// outside MPI, and a watchdog for MPI calls that can no longer return.
//
// Every rank keeps one TCP connection to every other rank (a full mesh, set
// up once when the transport is created) and a thread that sends a heartbeat
// byte on each of them. A peer whose connection closes without a goodbye
// byte is no longer running (the kernel closes a dead process's sockets); a
// peer heard from less recently than `silence` is unreachable (its host or
// link is gone: nothing closes, nothing arrives).
//
// The watchdog exists because OpenMPI 4.1 cannot time out a one-sided call:
// over TCP (osc pt2pt) MPI_Get, MPI_Accumulate and MPI_Win_flush spin inside
// MPI forever when the target died or cannot be reached, and ULFM is not
// built into Debian's OpenMPI. The transport declares each operation
// (BeginOp) and brackets each MPI call inside it (CallGuard). The thread
// ends the process with the operation's error, written the way the caller
// would have returned it, when the call is still inside MPI at the
// operation's deadline, or `stuck_grace` after the peer it waits for was
// found dead. When the call does return, the caller itself detects the same
// condition (CheckOp) and returns the error as a value; the text is the same
// either way.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_LIVENESS_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_LIVENESS_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/unique_fd.h"

namespace faultline {

// What one rank publishes so that the others can reach and name it.
struct PeerAddress {
  int rank = 0;
  pid_t pid = 0;
  std::string host;               // gethostname() of the rank
  int port = 0;                   // its liveness listener
  std::vector<std::string> ipv4;  // its non-loopback IPv4 addresses
  // Drawn at random by its monitor: a hello names the process by pid and
  // tag, because a pid alone can belong to another process (a rank of
  // another job in its own pid namespace, as containers give each rank the
  // same small pids).
  uint64_t tag = 0;

  // "pid port host ip,ip tag" (the tag in 16 lowercase hex digits) and
  // back; Parse fails on a malformed text, on a pid below 1, a port outside
  // 1-65535, and a tag that is not 16 lowercase hex digits or is 0.
  std::string Serialize() const;
  static Result<PeerAddress> Parse(int rank, const std::string& text);
  // Parses the NUL-terminated text in the fixed-size `slot` of `size` bytes
  // that rank `rank` published (the address exchange); fails when no NUL
  // ends it within the slot, never reading past it.
  static Result<PeerAddress> ParseSlot(int rank, const char* slot, size_t size);
};

struct LivenessOptions {
  int rank = 0;
  // The operation timeout of the transport; the other durations derive
  // from it when left at zero: heartbeat = timeout / 20 clamped to
  // [10 ms, 200 ms], silence = timeout / 2, stuck_grace = timeout / 10
  // clamped to [50 ms, 500 ms].
  std::chrono::milliseconds timeout{30000};
  std::chrono::milliseconds heartbeat{0};
  std::chrono::milliseconds silence{0};
  std::chrono::milliseconds stuck_grace{0};
  // Called on the monitor's thread with the error when it abandons a stuck
  // call; the monitor then ends the process with _exit(1).
  std::function<void(const Status&)> on_abandon;
};

class LivenessMonitor {
 public:
  // Opens the listening socket; call before the address exchange.
  static Result<std::unique_ptr<LivenessMonitor>> Listen(LivenessOptions options);
  // Stops the thread, says goodbye to every peer (so that none takes this
  // rank's exit for a death; see LeaveWithoutGoodbye) and closes the
  // connections.
  ~LivenessMonitor();

  // Makes the destructor close the connections without a goodbye, so that
  // the peers take this rank's exit for what it is: a failure.
  void LeaveWithoutGoodbye() { say_goodbye_ = false; }

  // Tells every peer that this rank is failing (before it exits), so that
  // they name the rank that died rather than this one. Idempotent.
  void AnnounceFailure();

  // This rank's address to publish.
  const PeerAddress& self() const { return self_; }
  // Connects to every peer in `peers` (indexed by rank, this rank included)
  // by `deadline`, then starts the heartbeat thread. Lower ranks connect to
  // higher ones; a peer on the same host is reached on 127.0.0.1, one on
  // another host at whichever of its addresses answers first (all are
  // tried at once, so one this host cannot reach holds nothing up). When it
  // fails, the peers it did connect to are told of a failure
  // (AnnounceFailure) and the monitor leaves without a goodbye: they must not
  // take this rank's exit for a normal end (see LeaveWithoutGoodbye).
  Status Connect(const std::vector<PeerAddress>& peers, std::chrono::steady_clock::time_point deadline);

  // "rank 3 (pid 4242 on host fl-host1)".
  std::string Name(int peer) const;

  // One logical operation (a transfer to `target`, or a collective when
  // target is -1) that must complete within `limit` from now. `what`
  // describes it ("reading 16 rows of rank 3"); `context` is what the caller
  // prepends to the error ("DistTensor('t').pull"), used when the watchdog
  // reports it.
  void BeginOp(std::string what, std::string context, int target, std::chrono::milliseconds limit);
  void EndOp();
  // Between MPI calls of the current operation: the error if its target
  // (any peer for a collective) died, or the deadline passed; OK otherwise.
  Status CheckOp();
  // After an MPI call of the current operation returned an error: waits
  // until the monitor can name a dead or unreachable peer, or `silence` (and
  // a heartbeat) or the deadline passes, and returns the error (`mpi_error`
  // when no peer is to blame).
  Status FailOp(const std::string& mpi_error);

  // Marks this thread as inside an MPI call of the current operation.
  class CallGuard {
   public:
    explicit CallGuard(LivenessMonitor* monitor);
    ~CallGuard();
    CallGuard(const CallGuard&) = delete;
    CallGuard& operator=(const CallGuard&) = delete;

   private:
    LivenessMonitor* monitor_;
  };

  // Durations in use (after defaults were derived).
  const LivenessOptions& options() const { return options_; }

 private:
  // What a peer's connection has told this rank. Bytes move a connected
  // state along (a refusal only as the first byte on a connection this rank
  // opened; a goodbye wins over a failure it follows or comes with); its
  // closing moves it to the closed state that it names, and a closed state
  // is final. Every decision on it is a switch without a default, so that
  // the compiler (-Wswitch) names each one that a new state would change.
  enum class PeerState {
    kUnheard,           // connected, nothing has come yet (this rank's own entry stays here)
    kHeard,             // heartbeats have come
    kAnnouncedFailure,  // it said it is failing on its own (before it closes)
    // The process at the address this rank connected to refused a hello
    // meant for this peer's pid and tag (kNotThisProcess): another process
    // listens there. What comes after the refusal is not this peer's.
    kRefusedHello,
    // It said goodbye: it ends normally, and its connection closing after
    // that is no death.
    kSaidGoodbye,
    // Closed without a goodbye, at `closed_at`:
    kDied,              // from kUnheard or kHeard: it is no longer running
    kLeftAfterFailure,  // from kAnnouncedFailure: it stopped after a failure of its own
    kNeverReached,      // from kRefusedHello: the peer was never reached
  };
  struct Peer {
    PeerAddress address;
    UniqueFd fd;
    std::string reached;  // "ip:port" this rank connected to (higher ranks only)
    PeerState state = PeerState::kUnheard;
    // When a byte last came (or the mesh was set up): a connected peer
    // silent for longer than `silence` is unreachable.
    std::chrono::steady_clock::time_point last_heard;
    std::chrono::steady_clock::time_point closed_at;  // in kDied, kLeftAfterFailure and kNeverReached
  };
  struct Op {
    bool active = false;
    std::string what;
    std::string context;
    int target = -1;
    std::chrono::milliseconds limit{0};
    std::chrono::steady_clock::time_point deadline;
  };

  explicit LivenessMonitor(LivenessOptions options) : options_(std::move(options)) {}
  // Connect without what it does on failure.
  Status ConnectMesh(const std::vector<PeerAddress>& peers, std::chrono::steady_clock::time_point deadline);
  // ConnectMesh's second half: accepts connections until every lower rank
  // has said hello, reading all of them at once.
  Status AcceptHellos(std::chrono::steady_clock::time_point deadline);
  void Run();
  // Reads what the peer sent; true when its connection closed without a goodbye.
  bool ReadFromLocked(Peer& peer, std::chrono::steady_clock::time_point now);
  // Reads whatever every peer has sent (without waiting).
  void ReadReadyPeersLocked(std::chrono::steady_clock::time_point now);
  void SendHeartbeats(char byte);
  // Under mu_: the peers this operation waits for that died / went silent.
  std::vector<int> DeadPeersLocked(int target) const;
  std::vector<int> SilentPeersLocked(int target, std::chrono::steady_clock::time_point now) const;
  // Under mu_: "rank 3 (...) is no longer running" for each dead peer of
  // `target` (-1: any), and "... is unreachable (...)" for each silent one.
  std::vector<std::string> CausesLocked(int target, bool silent_too, std::chrono::steady_clock::time_point now) const;
  // Under mu_: the error text for the current op, or "" when nothing is wrong yet.
  std::string DiagnoseLocked(bool timed_out, std::chrono::steady_clock::time_point now) const;
  Status ErrorLocked(const std::string& message) const;
  // Claims the right to report the failure; returns false when the watchdog
  // already did (the process is ending: the caller then waits for it).
  bool ClaimLocked();
  [[noreturn]] void WaitForTheWatchdog();

  LivenessOptions options_;
  PeerAddress self_;
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // eventfd: stops the thread
  std::vector<Peer> peers_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  Op op_;
  bool claimed_ = false;
  std::atomic<bool> in_call_{false};
  std::atomic<int> dead_count_{0};
  std::atomic<int64_t> deadline_ns_{0};
  bool say_goodbye_ = true;
  std::atomic<bool> failure_announced_{false};
  std::atomic<int64_t> call_started_ns_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_LIVENESS_H_
