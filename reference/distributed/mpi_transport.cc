// Implements MpiTransport over OpenMPI.
#include "reference/distributed/mpi_transport.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "reference/distributed/rank_report.h"
#include "reference/distributed/route_plan.h"

namespace faultline {
namespace {

// Rows (datatype blocks) per MPI_Get / MPI_Accumulate; see TransferRows.
constexpr int64_t kRowsPerCall = 4096;

// The tag of WireUp's messages.
constexpr int kWireUpTag = 0x464c;

// One rank's liveness address in the exchange (PeerAddress::Serialize).
constexpr size_t kAddressBytes = 512;

// Ends the monitor's current operation when it goes out of scope.
struct OpScope {
  explicit OpScope(LivenessMonitor* monitor) : monitor(monitor) {}
  ~OpScope() { monitor->EndOp(); }
  LivenessMonitor* monitor;
};

// Finalizes MPI at exit unless a peer failed: MPI_Finalize would wait for it.
bool g_peer_failed = false;
void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_peer_failed) MPI_Finalize();
}

// FNV-1a over `bytes`: a fingerprint of what ranks must agree on.
uint64_t Fingerprint(const void* bytes, size_t n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) hash = (hash ^ static_cast<const unsigned char*>(bytes)[i]) * 0x100000001b3ull;
  return hash;
}

// What a rank says of the tensor it creates, for AgreeOnTensor. (The
// tensors created before agree by induction: every creation is agreed.)
enum TensorField { kRefused, kName, kDim, kNumIds, kBook, kSettings, kTensorFields };

std::array<int64_t, kTensorFields> Summarize(const TensorSpec& spec, const Status& checked) {
  const std::vector<int64_t>& ends = spec.book.ends();
  return {checked.ok() ? 0 : 1,
          static_cast<int64_t>(Fingerprint(spec.name.data(), spec.name.size())),
          spec.dim,
          spec.book.num_ids(),
          static_cast<int64_t>(Fingerprint(ends.data(), ends.size() * sizeof(int64_t))),
          static_cast<int64_t>(Fingerprint(spec.settings.data(), spec.settings.size()))};
}

// How rank `r`'s tensor differs from rank 0's ("" if it does not);
// `settings` are this rank's own (the others' are known by fingerprint only).
std::string TensorDifference(int r, const int64_t* mine, const int64_t* first, const std::string& settings) {
  const std::string rank = "rank " + std::to_string(r);
  if (mine[kName] != first[kName]) return rank + " creates a tensor of another name at this point than rank 0";
  if (mine[kDim] != first[kDim]) {
    return rank + " gives it dim " + std::to_string(mine[kDim]) + "; rank 0 gives dim " + std::to_string(first[kDim]);
  }
  if (mine[kNumIds] != first[kNumIds]) {
    return rank + "'s partition book covers " + std::to_string(mine[kNumIds]) + " ids; rank 0's covers " +
           std::to_string(first[kNumIds]);
  }
  if (mine[kBook] != first[kBook]) return rank + "'s partition book splits the ids otherwise than rank 0's";
  if (mine[kSettings] != first[kSettings]) {
    return rank + " creates it with other settings than rank 0 (this rank's: '" + settings + "')";
  }
  return "";
}

}  // namespace

Status InitializeMpi() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return OkStatus();
  // Before MPI_Init, with this rank's pid: RunMpiJob then notices a rank
  // that dies inside MPI_Init or while joining, before it marks "joined".
  MarkFromRank("started");
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return UnavailableError("MPI_Init_thread failed; start the program with mpirun");
  }
  MarkFromRank("initialized");
  std::atexit(FinalizeAtExit);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return OkStatus();
}

Result<MpiOptions> MpiOptionsFromEnv() {
  MpiOptions options;
  for (auto [name, field] : {std::make_pair("FAULTLINE_MPI_TIMEOUT_S", &options.timeout),
                             std::make_pair("FAULTLINE_MPI_JOIN_TIMEOUT_S", &options.join_timeout)}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    char* end = nullptr;
    const double seconds = std::strtod(value, &end);
    if (end == value || *end != '\0' || !(seconds > 0) || seconds > 86400) {
      return InvalidArgumentError(std::string(name) + " is '" + value + "'; expected seconds in (0, 86400]");
    }
    *field = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  return options;
}

Result<std::unique_ptr<MpiTransport>> MpiTransport::Create(MpiOptions options) {
  FL_RETURN_IF_ERROR(InitializeMpi());
  std::unique_ptr<MpiTransport> transport(new MpiTransport());
  transport->options_ = options;
  MPI_Comm_rank(MPI_COMM_WORLD, &transport->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &transport->size_);
  // Joining, every step of it, is bounded by one join_timeout.
  transport->join_deadline_ = std::chrono::steady_clock::now() + options.join_timeout;

  Result<std::unique_ptr<LivenessMonitor>> joined = transport->Join();
  // Failed: MPI_Finalize at exit would wait for the ranks that did not join.
  // (Peers this rank's monitor reached take its exit for a failure:
  // LivenessMonitor::Connect announced it.)
  if (!joined.ok()) return transport->Fail(joined.status());
  transport->monitor_ = std::move(*joined);
  MarkFromRank("joined");
  return transport;
}

Result<std::unique_ptr<LivenessMonitor>> MpiTransport::Join() {
  FL_RETURN_IF_ERROR(WireUp());

  // Who is who and how to reach them, so that a failure can name the peer.
  LivenessOptions liveness;
  liveness.rank = rank_;
  liveness.timeout = options_.timeout;
  liveness.on_abandon = [](const Status& error) {
    // The report first: it is what RunRank's launcher reads, and writing to
    // a stderr whose reader is gone must not end the process before it
    // (SIGPIPE); the process ends with _exit(1) right after.
    ReportFromRank(error.ToString());
    signal(SIGPIPE, SIG_IGN);
    std::fprintf(stderr, "%s\n", error.ToString().c_str());
    std::fflush(stderr);
  };
  FL_ASSIGN_OR_RETURN(std::unique_ptr<LivenessMonitor> monitor, LivenessMonitor::Listen(liveness));
  std::string address = monitor->self().Serialize();
  if (address.size() >= kAddressBytes) {
    return InternalError("mpi rank " + std::to_string(rank_) + ": the liveness address '" + address +
                         "' is longer than " + std::to_string(kAddressBytes - 1) + " bytes");
  }
  address.resize(kAddressBytes);
  std::vector<char> addresses(static_cast<size_t>(size_) * kAddressBytes);
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Iallgather(address.data(), kAddressBytes, MPI_CHAR, addresses.data(), kAddressBytes,
                                          MPI_CHAR, MPI_COMM_WORLD, &request),
                           "MPI_Iallgather"));
  FL_RETURN_IF_ERROR(Wait(&request, "joining the job"));
  std::vector<PeerAddress> peers;
  for (int r = 0; r < size_; ++r) {
    Result<PeerAddress> peer =
        PeerAddress::ParseSlot(r, addresses.data() + static_cast<size_t>(r) * kAddressBytes, kAddressBytes);
    if (!peer.ok()) return peer.status().WithContext("mpi rank " + std::to_string(rank_) + ": joining the job");
    peers.push_back(std::move(*peer));
  }
  if (options_.before_connect_for_testing) options_.before_connect_for_testing(rank_);
  FL_RETURN_IF_ERROR(monitor->Connect(peers, join_deadline_));
  return monitor;
}

// OpenMPI 4.1's TCP BTL connects a pair of ranks on the first message
// between them, and when both ends connect at the same moment it sometimes
// loses the connection: a later call then hangs (seen here once in ~20 runs
// as "connect() to 10.77.0.1:1025 failed", or as an MPI_Win_allocate that
// never returns). So the first thing every rank does is to connect each pair
// exactly once, the lower rank sending and the higher one receiving; every
// later message reuses those connections. On one host (shared memory) it
// costs one tiny message per pair.
Status MpiTransport::WireUp() {
  std::vector<MPI_Request> requests;
  std::vector<int> peers;  // requests[i] connects to peers[i]
  std::vector<char> received(size_, 0);
  const char token = 1;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request;
    const int code = peer < rank_ ? MPI_Irecv(&received[peer], 1, MPI_CHAR, peer, kWireUpTag, MPI_COMM_WORLD, &request)
                                  : MPI_Isend(&token, 1, MPI_CHAR, peer, kWireUpTag, MPI_COMM_WORLD, &request);
    FL_RETURN_IF_ERROR(Check(code, peer < rank_ ? "MPI_Irecv" : "MPI_Isend"));
    requests.push_back(request);
    peers.push_back(peer);
  }
  // Polled together (a completed request turns MPI_REQUEST_NULL), so that a
  // timeout names every rank that has not connected. A 1-byte send completes
  // without its receiver, so in practice the ranks named are lower-numbered
  // ones; a rank waiting for a late higher one passes here and times out in
  // the address exchange instead.
  std::vector<int> completed(requests.size());
  while (true) {
    int count = 0;
    FL_RETURN_IF_ERROR(Check(
        MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &count, completed.data(), MPI_STATUSES_IGNORE),
        "MPI_Testsome"));
    if (count == MPI_UNDEFINED) return OkStatus();  // every request has completed
    if (std::chrono::steady_clock::now() > join_deadline_) break;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  std::string names;
  int missing = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    names += (missing++ == 0 ? "" : ", ") + std::to_string(peers[i]);
  }
  const bool several = missing > 1;
  return Fail(UnavailableError("mpi rank " + std::to_string(rank_) +
                               ": connecting to every rank did not complete "
                               "within " +
                               JoinSeconds() + " s: not every rank has joined (rank" + (several ? "s " : " ") + names +
                               (several ? " have" : " has") + " not connected)"));
}

MpiTransport::~MpiTransport() {
  if (monitor_ == nullptr) return;          // Create failed before every rank joined
  if (!failure_.ok() || !Barrier().ok()) {  // MPI_Win_free would wait for the missing peer
    if (monitor_ != nullptr) monitor_->LeaveWithoutGoodbye();
    return;
  }
  monitor_->BeginOp("freeing the windows", "", -1, options_.timeout);
  LivenessMonitor::CallGuard guard(monitor_.get());
  for (MPI_Win& window : windows_) {
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
  }
  // monitor_ says goodbye as it is destroyed.
}

std::string MpiTransport::MpiErrorText(int mpi_code, const char* call) const {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(mpi_code, text, &length);
  return std::string(call) + " failed: " + std::string(text, length);
}

Status MpiTransport::Check(int mpi_code, const char* call) {
  if (mpi_code == MPI_SUCCESS) return OkStatus();
  return UnavailableError("mpi rank " + std::to_string(rank_) + ": " + MpiErrorText(mpi_code, call));
}

Status MpiTransport::Fail(Status status) {
  if (failure_.ok()) failure_ = status;
  if (monitor_ != nullptr) monitor_->AnnounceFailure();
  g_peer_failed = true;
  return status;
}

Status MpiTransport::Usable() const {
  if (failure_.ok()) return OkStatus();
  return FailedPreconditionError("mpi rank " + std::to_string(rank_) +
                                 ": the transport is unusable after an earlier failure: " + failure_.message());
}

Status MpiTransport::Wait(MPI_Request* request, const std::string& what) {
  return Wait(request, what, options_.timeout);
}

Status MpiTransport::Wait(MPI_Request* request, const std::string& what, std::chrono::milliseconds limit) {
  int done = 0;
  if (monitor_ == nullptr) {  // joining: nobody to ask yet
    while (true) {
      FL_RETURN_IF_ERROR(Check(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test"));
      if (done) return OkStatus();
      if (std::chrono::steady_clock::now() > join_deadline_) break;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return Fail(UnavailableError("mpi rank " + std::to_string(rank_) + ": " + what + " did not complete within " +
                                 JoinSeconds() + " s: not every rank has joined"));
  }
  monitor_->BeginOp(what, "", -1, limit);
  OpScope scope(monitor_.get());
  while (true) {
    int code;
    {
      LivenessMonitor::CallGuard guard(monitor_.get());
      code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    }
    if (code != MPI_SUCCESS) return Fail(monitor_->FailOp(MpiErrorText(code, "MPI_Test")));
    if (done) return OkStatus();
    Status checked = monitor_->CheckOp();
    if (!checked.ok()) return Fail(checked);
    // Ranks often outnumber cores: let the peers run instead of spinning.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

Status MpiTransport::Barrier() { return BarrierWithin(options_.timeout); }

std::string MpiTransport::JoinSeconds() const {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", std::chrono::duration<double>(options_.join_timeout).count());
  return text;
}

Status MpiTransport::BarrierWithin(std::chrono::milliseconds limit) {
  FL_RETURN_IF_ERROR(Usable());
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier"));
  FL_RETURN_IF_ERROR(Wait(&request, "barrier", limit));
  for (MPI_Win window : windows_) MPI_Win_sync(window);  // see the rows peers wrote before the barrier
  return OkStatus();
}

// MPI pairs the ranks' windows by the order of the calls alone, and sizes
// each rank's part from that rank's own book: ranks that created different
// tensors would read and write each other's rows unchecked. So every rank
// says what it creates and whether it refused its own arguments (also the
// proof that every rank is here, as MPI_Win_allocate cannot time out), and
// all fail alike, naming the first rank that refused or differs from rank
// 0, with nothing allocated: the ranks stay in step for the next creation.
Status MpiTransport::AgreeOnTensor(const TensorSpec& spec, const Status& checked) {
  FL_RETURN_IF_ERROR(Usable());
  const std::array<int64_t, kTensorFields> mine = Summarize(spec, checked);
  std::vector<int64_t> all(static_cast<size_t>(kTensorFields) * size_);
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Iallgather(mine.data(), kTensorFields, MPI_INT64_T, all.data(), kTensorFields,
                                          MPI_INT64_T, MPI_COMM_WORLD, &request),
                           "MPI_Iallgather"));
  FL_RETURN_IF_ERROR(Wait(&request, "agreeing on the tensor '" + spec.name + "'", options_.join_timeout));
  for (int r = 0; r < size_; ++r) {  // refusals first: a refused spec may also differ
    if (all[static_cast<size_t>(r) * kTensorFields + kRefused] == 0) continue;
    return InvalidArgumentError("mpi rank " + std::to_string(rank_) + ": rank " + std::to_string(r) +
                                " refused its own arguments for it (its error says why; nothing was created)");
  }
  for (int r = 1; r < size_; ++r) {
    const std::string difference =
        TensorDifference(r, &all[static_cast<size_t>(r) * kTensorFields], all.data(), spec.settings);
    if (!difference.empty()) {
      return InvalidArgumentError("mpi rank " + std::to_string(rank_) + ": the ranks create different tensors: " +
                                  difference + " (every rank must create the same tensors, in the same order)");
    }
  }
  return OkStatus();
}

Status MpiTransport::CheckLimits(const TensorSpec& spec) const {
  if (spec.dim <= INT_MAX) return OkStatus();
  return InvalidArgumentError("tensor '" + spec.name + "': dim is " + std::to_string(spec.dim) +
                              "; expected <= " + std::to_string(INT_MAX) +
                              " (the mpi transport moves a row as one MPI count of "
                              "float32 values, an int)");
}

// A verdict is a reason's length (0: none) from every rank, then, only when
// one is not 0 (every rank sees the same lengths, so all decide alike), the
// reasons themselves.
Status MpiTransport::AgreeOnVerdict(const std::string& what, const Status& mine) {
  if (Status usable = Usable(); !usable.ok()) return mine.ok() ? usable : mine;  // its own reason first
  constexpr size_t kMaxReasonBytes = 4096;
  std::string reason = mine.ok() ? "" : mine.ToString();
  if (reason.size() > kMaxReasonBytes) reason = reason.substr(0, kMaxReasonBytes - 3) + "...";
  int length = static_cast<int>(reason.size());
  std::vector<int> lengths(size_);
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Iallgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD, &request),
                           "MPI_Iallgather"));
  FL_RETURN_IF_ERROR(Wait(&request, "agreeing on " + what));
  int first = -1;
  for (int r = 0; r < size_ && first < 0; ++r) {
    if (lengths[r] > 0) first = r;
  }
  if (first < 0) return OkStatus();
  std::vector<int> offsets(size_, 0);
  for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::vector<char> reasons(static_cast<size_t>(offsets.back()) + lengths.back());
  FL_RETURN_IF_ERROR(Check(MPI_Iallgatherv(reason.data(), length, MPI_CHAR, reasons.data(), lengths.data(),
                                           offsets.data(), MPI_CHAR, MPI_COMM_WORLD, &request),
                           "MPI_Iallgatherv"));
  FL_RETURN_IF_ERROR(Wait(&request, "agreeing on " + what));
  if (!mine.ok()) return mine;  // its own reason, as it would have alone
  return FailedPreconditionError("mpi rank " + std::to_string(rank_) + ": rank " + std::to_string(first) + " refused " +
                                 what + ": " + std::string(reasons.data() + offsets[first], lengths[first]));
}

// Creating a tensor is setup, bounded by join_timeout (see MpiOptions): the
// ranks reach it at different times, and MPI_Win_allocate spins inside
// MPI, which on a loaded machine once took over 6 s.
Status MpiTransport::AllocateTensor(const TensorSpec& spec) {
  const MPI_Aint bytes = static_cast<MPI_Aint>(spec.book.size(rank_) * spec.dim * sizeof(float));
  float* base = nullptr;
  MPI_Win window;
  {
    monitor_->BeginOp("allocating the window of '" + spec.name + "'", "", -1, options_.join_timeout);
    OpScope scope(monitor_.get());
    int code;
    {
      LivenessMonitor::CallGuard guard(monitor_.get());
      code = MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &window);
    }
    if (code != MPI_SUCCESS) return Fail(monitor_->FailOp(MpiErrorText(code, "MPI_Win_allocate")));
    MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN);
    if (bytes > 0) std::memset(base, 0, bytes);
    {
      LivenessMonitor::CallGuard guard(monitor_.get());
      code = MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
    }
    if (code != MPI_SUCCESS) return Fail(monitor_->FailOp(MpiErrorText(code, "MPI_Win_lock_all")));
  }
  windows_.push_back(window);
  return BarrierWithin(options_.join_timeout);  // every partition is zero before anyone writes
}

Status MpiTransport::TransferRows(int handle, int part, const std::vector<int64_t>& local_ids, float* buffer,
                                  bool write, MPI_Op op) {
  FL_RETURN_IF_ERROR(Usable());
  const int64_t dim = spec(handle).dim;
  MPI_Win window = windows_[handle];
  const bool add = op == MPI_SUM;
  const std::string rows = std::to_string(local_ids.size()) + " rows ";
  monitor_->BeginOp(write ? (add ? "adding " : "writing ") + rows + "to rank " + std::to_string(part)
                          : "reading " + rows + "of rank " + std::to_string(part),
                    "DistTensor('" + spec(handle).name + "')." + (write ? (add ? "push_add" : "push") : "pull"), part,
                    options_.timeout);
  OpScope scope(monitor_.get());
  Status checked = monitor_->CheckOp();  // a target known to be dead: fail without entering MPI
  if (!checked.ok()) return Fail(checked);
  // One derived datatype per chunk addresses the rows inside the target's
  // window. At most kRowsPerCall rows (blocks) per call: osc pt2pt (the TCP
  // path across hosts) sends the target datatype inside one eager fragment
  // (64 KiB over TCP, 8 bytes a block) and hangs on an MPI_Accumulate of
  // 8192 blocks or more; 4096 leave half of it free.
  const int64_t chunk = std::clamp<int64_t>((int64_t{1} << 24) / dim, 1, kRowsPerCall);
  std::vector<MPI_Aint> offsets;
  for (size_t first = 0; first < local_ids.size(); first += chunk) {
    const size_t count = std::min<size_t>(chunk, local_ids.size() - first);
    offsets.resize(count);
    for (size_t i = 0; i < count; ++i) {
      offsets[i] = static_cast<MPI_Aint>(local_ids[first + i] * dim * static_cast<int64_t>(sizeof(float)));
    }
    MPI_Datatype rows_type;
    FL_RETURN_IF_ERROR(Check(MPI_Type_create_hindexed_block(static_cast<int>(count), static_cast<int>(dim),
                                                            offsets.data(), MPI_FLOAT, &rows_type),
                             "MPI_Type_create_hindexed_block"));
    MPI_Type_commit(&rows_type);
    float* origin = buffer + first * dim;
    // chunk x dim <= max(2^24, dim), and CheckLimits keeps dim an int.
    const int values = static_cast<int>(static_cast<int64_t>(count) * dim);
    int code;
    {
      LivenessMonitor::CallGuard guard(monitor_.get());
      code = write ? MPI_Accumulate(origin, values, MPI_FLOAT, part, 0, 1, rows_type, op, window)
                   : MPI_Get(origin, values, MPI_FLOAT, part, 0, 1, rows_type, window);
    }
    MPI_Type_free(&rows_type);
    if (code != MPI_SUCCESS) return Fail(monitor_->FailOp(MpiErrorText(code, write ? "MPI_Accumulate" : "MPI_Get")));
    {
      LivenessMonitor::CallGuard guard(monitor_.get());
      code = MPI_Win_flush(part, window);
    }
    if (code != MPI_SUCCESS) return Fail(monitor_->FailOp(MpiErrorText(code, "MPI_Win_flush")));
  }
  return OkStatus();
}

Status MpiTransport::ReadRows(int handle, int part, const std::vector<int64_t>& local_ids, float* out) {
  return TransferRows(handle, part, local_ids, out, /*write=*/false, MPI_NO_OP);
}

// MPI_REPLACE rather than MPI_Put: accumulates are atomic per element, so
// concurrent writers never tear a value.
Status MpiTransport::WriteRows(int handle, int part, const std::vector<int64_t>& local_ids, const float* rows,
                               WriteMode mode) {
  return TransferRows(handle, part, local_ids, const_cast<float*>(rows), /*write=*/true,
                      mode == WriteMode::kAdd ? MPI_SUM : MPI_REPLACE);
}

// Every rank first gathers every rank's row counts (a size x size matrix)
// and plans from it (route_plan.h): so a rank that refuses its own batches,
// and totals past MPI's int counts, make every rank fail alike, naming the
// same rank, before any data moves; no rank waits in an MPI_Ialltoallv that
// another skipped.
Result<std::vector<RowBatch>> MpiTransport::RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) {
  FL_RETURN_IF_ERROR(Usable());
  const std::string here = "mpi rank " + std::to_string(rank_) + ": routing gradients to their owners";
  Status mine;
  if (static_cast<int>(by_partition.size()) != size_) {
    mine = InvalidArgumentError("RouteToOwners: " + std::to_string(by_partition.size()) + " batches for " +
                                std::to_string(size_) + " ranks");
  }
  for (int r = 0; mine.ok() && r < size_; ++r) {
    const RowBatch& batch = by_partition[r];
    int64_t expected = 0;
    if (__builtin_mul_overflow(static_cast<int64_t>(batch.ids.size()), dim, &expected) || dim < 1 ||
        static_cast<int64_t>(batch.rows.size()) != expected) {
      mine =
          InvalidArgumentError("RouteToOwners: the batch for rank " + std::to_string(r) + " holds " +
                               std::to_string(batch.rows.size()) + " values for " + std::to_string(batch.ids.size()) +
                               " ids; expected one row of dim " + std::to_string(dim) + " per id");
    }
  }
  std::vector<int64_t> my_counts(size_, kRefusedRowCount);
  if (mine.ok()) {
    for (int r = 0; r < size_; ++r) my_counts[r] = static_cast<int64_t>(by_partition[r].ids.size());
  }
  std::vector<int64_t> counts(static_cast<size_t>(size_) * size_);
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(
      MPI_Iallgather(my_counts.data(), size_, MPI_INT64_T, counts.data(), size_, MPI_INT64_T, MPI_COMM_WORLD, &request),
      "MPI_Iallgather"));
  FL_RETURN_IF_ERROR(Wait(&request, "routing gradients to their owners"));
  FL_RETURN_IF_ERROR(mine.WithContext("mpi rank " + std::to_string(rank_)));  // its own reason; the others name it
  Result<RoutePlan> planned = PlanRoute(counts, size_, rank_, dim);
  if (!planned.ok()) return planned.status().WithContext(here);
  const RoutePlan& plan = *planned;

  std::vector<int64_t> send_ids;
  std::vector<float> send_rows;
  for (const RowBatch& batch : by_partition) {
    send_ids.insert(send_ids.end(), batch.ids.begin(), batch.ids.end());
    send_rows.insert(send_rows.end(), batch.rows.begin(), batch.rows.end());
  }
  std::vector<RowBatch> received(1);
  received[0].ids.resize(plan.total_receive_rows);
  received[0].rows.resize(received[0].ids.size() * dim);
  received[0].counts_by_sender.assign(plan.receive_rows.begin(), plan.receive_rows.end());
  // Nonblocking collectives read the count and offset arrays until they complete: `plan` keeps them alive.
  MPI_Request requests[2];
  FL_RETURN_IF_ERROR(Check(MPI_Ialltoallv(send_ids.data(), plan.send_rows.data(), plan.send_row_offsets.data(),
                                          MPI_INT64_T, received[0].ids.data(), plan.receive_rows.data(),
                                          plan.receive_row_offsets.data(), MPI_INT64_T, MPI_COMM_WORLD, &requests[0]),
                           "MPI_Ialltoallv"));
  FL_RETURN_IF_ERROR(Check(MPI_Ialltoallv(send_rows.data(), plan.send_floats.data(), plan.send_float_offsets.data(),
                                          MPI_FLOAT, received[0].rows.data(), plan.receive_floats.data(),
                                          plan.receive_float_offsets.data(), MPI_FLOAT, MPI_COMM_WORLD, &requests[1]),
                           "MPI_Ialltoallv"));
  FL_RETURN_IF_ERROR(Wait(&requests[0], "routing gradients to their owners"));
  FL_RETURN_IF_ERROR(Wait(&requests[1], "routing gradients to their owners"));
  return received;
}

}  // namespace faultline
