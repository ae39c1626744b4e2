// Implements MpiTransport over OpenMPI.
#include "reference/distributed/mpi_transport.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "reference/process/process.h"

namespace faultline {
namespace {

constexpr int kHostNameBytes = 256;

// Finalizes MPI at exit unless a peer failed: MPI_Finalize would wait for it.
bool g_peer_failed = false;
void FinalizeAtExit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !g_peer_failed) MPI_Finalize();
}

Status InitializeMpiOnce() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return OkStatus();
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    return UnavailableError("MPI_Init_thread failed; start the program with mpirun");
  }
  std::atexit(FinalizeAtExit);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return OkStatus();
}

std::string LocalHostName() {
  char name[kHostNameBytes] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

Result<MpiOptions> MpiOptionsFromEnv() {
  MpiOptions options;
  const char* value = std::getenv("FAULTLINE_MPI_TIMEOUT_S");
  if (value == nullptr) return options;
  char* end = nullptr;
  const double seconds = std::strtod(value, &end);
  if (end == value || *end != '\0' || !(seconds > 0) || seconds > 86400) {
    return InvalidArgumentError(std::string("FAULTLINE_MPI_TIMEOUT_S is '") + value +
                                "'; expected seconds in (0, 86400]");
  }
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  return options;
}

Result<std::unique_ptr<MpiTransport>> MpiTransport::Create(MpiOptions options) {
  FL_RETURN_IF_ERROR(InitializeMpiOnce());
  std::unique_ptr<MpiTransport> transport(new MpiTransport());
  transport->options_ = options;
  MPI_Comm_rank(MPI_COMM_WORLD, &transport->rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &transport->size_);
  const int size = transport->size_;

  // Who is who, so that a timeout can say which peer is gone.
  const int pid = static_cast<int>(getpid());
  std::vector<int> pids(size);
  std::vector<char> hosts(static_cast<size_t>(size) * kHostNameBytes);
  std::string host = LocalHostName();
  host.resize(kHostNameBytes - 1);
  MPI_Request request;
  FL_RETURN_IF_ERROR(transport->Check(MPI_Iallgather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD, &request),
                                      "MPI_Iallgather"));
  transport->pids_.assign(size, 0);  // unknown until the exchange completes
  transport->hosts_.assign(size, "");
  FL_RETURN_IF_ERROR(transport->Wait(&request, "joining the job"));
  FL_RETURN_IF_ERROR(transport->Check(MPI_Iallgather(host.c_str(), kHostNameBytes, MPI_CHAR, hosts.data(),
                                                     kHostNameBytes, MPI_CHAR, MPI_COMM_WORLD, &request),
                                      "MPI_Iallgather"));
  FL_RETURN_IF_ERROR(transport->Wait(&request, "joining the job"));
  for (int r = 0; r < size; ++r) {
    transport->pids_[r] = pids[r];
    transport->hosts_[r] = std::string(hosts.data() + static_cast<size_t>(r) * kHostNameBytes);
  }
  return transport;
}

MpiTransport::~MpiTransport() {
  if (!failure_.ok() || !Barrier().ok()) return;  // MPI_Win_free would wait for the missing peer
  for (MPI_Win& window : windows_) {
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
  }
}

Status MpiTransport::Check(int mpi_code, const char* call) {
  if (mpi_code == MPI_SUCCESS) return OkStatus();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(mpi_code, text, &length);
  return UnavailableError("mpi rank " + std::to_string(rank_) + ": " + call + " failed: " + std::string(text, length));
}

Status MpiTransport::Usable() const {
  if (failure_.ok()) return OkStatus();
  return FailedPreconditionError("mpi rank " + std::to_string(rank_) +
                                 ": the transport is unusable after an earlier failure: " + failure_.message());
}

std::string MpiTransport::DescribeMissingPeers() const {
  const std::string here = LocalHostName();
  std::string gone, elsewhere;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (hosts_[r].empty()) continue;  // never joined: named by the caller's message
    if (hosts_[r] != here) {
      elsewhere += (elsewhere.empty() ? "" : ", ") + std::to_string(r);
    } else if (!ProcessRunning(pids_[r])) {
      gone += std::string(gone.empty() ? "" : "; ") + "rank " + std::to_string(r) + " (pid " +
              std::to_string(pids_[r]) + " on " + hosts_[r] + ") is no longer running";
    }
  }
  if (!gone.empty()) return gone;
  if (!elsewhere.empty()) return "no rank on this host died; ranks on other hosts (" + elsewhere + ") may have";
  return "every rank is still running: one of them has not reached this call";
}

Status MpiTransport::Wait(MPI_Request* request, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  int done = 0;
  while (true) {
    FL_RETURN_IF_ERROR(Check(MPI_Test(request, &done, MPI_STATUS_IGNORE), "MPI_Test"));
    if (done) return OkStatus();
    if (std::chrono::steady_clock::now() > deadline) break;
    // Ranks often outnumber cores: let the peers run instead of spinning.
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  const double seconds = std::chrono::duration<double>(options_.timeout).count();
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%g", seconds);
  failure_ = UnavailableError("mpi rank " + std::to_string(rank_) + ": " + what + " did not complete within " + limit +
                              " s: " + DescribeMissingPeers());
  g_peer_failed = true;
  return failure_;
}

Status MpiTransport::Barrier() {
  FL_RETURN_IF_ERROR(Usable());
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier"));
  FL_RETURN_IF_ERROR(Wait(&request, "barrier"));
  for (MPI_Win window : windows_) MPI_Win_sync(window);  // see the rows peers wrote before the barrier
  return OkStatus();
}

Status MpiTransport::AllocateTensor(const TensorSpec& spec) {
  FL_RETURN_IF_ERROR(Barrier());  // MPI_Win_allocate cannot time out: first make sure every rank is here
  const MPI_Aint bytes = static_cast<MPI_Aint>(spec.book.size(rank_) * spec.dim * sizeof(float));
  float* base = nullptr;
  MPI_Win window;
  FL_RETURN_IF_ERROR(Check(MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &window),
                           "MPI_Win_allocate"));
  MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN);
  if (bytes > 0) std::memset(base, 0, bytes);
  FL_RETURN_IF_ERROR(Check(MPI_Win_lock_all(MPI_MODE_NOCHECK, window), "MPI_Win_lock_all"));
  windows_.push_back(window);
  return Barrier();  // every partition is zero before anyone writes
}

Status MpiTransport::TransferRows(int handle, int part, const std::vector<int64_t>& local_ids, float* buffer,
                                 bool write, MPI_Op op) {
  FL_RETURN_IF_ERROR(Usable());
  const int64_t dim = spec(handle).dim;
  MPI_Win window = windows_[handle];
  // One derived datatype per chunk addresses the rows inside the target's window.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / dim);
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
    const int values = static_cast<int>(count * dim);
    const int code = write ? MPI_Accumulate(origin, values, MPI_FLOAT, part, 0, 1, rows_type, op, window)
                           : MPI_Get(origin, values, MPI_FLOAT, part, 0, 1, rows_type, window);
    MPI_Type_free(&rows_type);
    FL_RETURN_IF_ERROR(Check(code, write ? "MPI_Accumulate" : "MPI_Get"));
    FL_RETURN_IF_ERROR(Check(MPI_Win_flush(part, window), "MPI_Win_flush"));
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

Result<std::vector<RowBatch>> MpiTransport::RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) {
  FL_RETURN_IF_ERROR(Usable());
  if (static_cast<int>(by_partition.size()) != size_) {
    return InvalidArgumentError("RouteToOwners: " + std::to_string(by_partition.size()) + " batches for " +
                                std::to_string(size_) + " ranks");
  }
  std::vector<int> send_counts(size_), receive_counts(size_);
  for (int r = 0; r < size_; ++r) send_counts[r] = static_cast<int>(by_partition[r].ids.size());
  MPI_Request request;
  FL_RETURN_IF_ERROR(Check(MPI_Ialltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT,
                                         MPI_COMM_WORLD, &request),
                           "MPI_Ialltoall"));
  FL_RETURN_IF_ERROR(Wait(&request, "routing gradients to their owners"));

  // Row counts and displacements, then the same in floats (x dim).
  auto displacements = [](const std::vector<int>& counts) {
    std::vector<int> out(counts.size(), 0);
    for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
    return out;
  };
  auto times_dim = [dim](std::vector<int> counts) {
    for (int& c : counts) c = static_cast<int>(c * dim);
    return counts;
  };
  std::vector<int64_t> send_ids;
  std::vector<float> send_rows;
  for (const RowBatch& batch : by_partition) {
    send_ids.insert(send_ids.end(), batch.ids.begin(), batch.ids.end());
    send_rows.insert(send_rows.end(), batch.rows.begin(), batch.rows.end());
  }
  // Nonblocking collectives read the count and offset arrays until they complete: keep them all alive.
  const std::vector<int> send_offsets = displacements(send_counts), receive_offsets = displacements(receive_counts);
  const std::vector<int> send_floats = times_dim(send_counts), receive_floats = times_dim(receive_counts);
  const std::vector<int> send_float_offsets = displacements(send_floats);
  const std::vector<int> receive_float_offsets = displacements(receive_floats);
  std::vector<RowBatch> received(1);
  received[0].ids.resize(receive_offsets.back() + receive_counts.back());
  received[0].rows.resize(received[0].ids.size() * dim);
  MPI_Request requests[2];
  FL_RETURN_IF_ERROR(Check(MPI_Ialltoallv(send_ids.data(), send_counts.data(), send_offsets.data(), MPI_INT64_T,
                                          received[0].ids.data(), receive_counts.data(), receive_offsets.data(),
                                          MPI_INT64_T, MPI_COMM_WORLD, &requests[0]),
                           "MPI_Ialltoallv"));
  FL_RETURN_IF_ERROR(Check(MPI_Ialltoallv(send_rows.data(), send_floats.data(), send_float_offsets.data(), MPI_FLOAT,
                                          received[0].rows.data(), receive_floats.data(),
                                          receive_float_offsets.data(), MPI_FLOAT, MPI_COMM_WORLD, &requests[1]),
                           "MPI_Ialltoallv"));
  FL_RETURN_IF_ERROR(Wait(&requests[0], "routing gradients to their owners"));
  FL_RETURN_IF_ERROR(Wait(&requests[1], "routing gradients to their owners"));
  return received;
}

}  // namespace faultline
