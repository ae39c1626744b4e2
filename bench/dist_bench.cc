// dist_bench: pull / push / push_add throughput of the distributed tensor
// over MPI (one rank per partition) next to an in-process memcpy of the same
// bytes and the in-process transport.
//
//   bazel run //bench:dist_bench -- [--ranks 4] [--hosts 0,1,2,4] [--rows 400000]
//                                   [--dim 128] [--batch 65536] [--iterations 20] [--json]
//
// The binary launches itself under mpirun; every rank pulls and pushes
// `batch` uniformly random rows per iteration at the same time, so with P
// ranks (P-1)/P of the rows are remote. --hosts lists the layouts to run: 0
// is this machine with shared memory (the default); N >= 1 spreads the ranks
// evenly over N network-namespace hosts on this machine that talk over TCP
// only (reference/distributed/testing/netns_hosts.h; needs root).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "reference/base/parse_int.h"
#include "reference/cli/int_flag.h"
#include "reference/distributed/dist_tensor.h"
#include "reference/distributed/in_process_transport.h"
#include "reference/distributed/mpi_transport.h"
#include "reference/distributed/testing/mpi_launcher.h"
#include "reference/distributed/testing/netns_hosts.h"
#include "reference/process/child_registry.h"

namespace faultline {
namespace {

struct Workload {
  int64_t rows = 400000;
  int64_t dim = 128;
  int64_t batch = 65536;
  int iterations = 20;
};

using Clock = std::chrono::steady_clock;

// Set by SIGTERM, SIGINT or SIGHUP while an MPI job runs: the launcher then
// ends the job and removes its folders (MpiJobOptions::stop), and the
// signal is raised again once that is done. Ended at once, this process
// would leave Open MPI's folders in /tmp and /dev/shm.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
volatile sig_atomic_t stop_signal = 0;
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

void RequestStop(int signal) {
  stop_signal = signal;
  stop_requested.store(true);
}

// Catches the stop signals for its lifetime; then restores what was there
// and, when one came, raises it again, so that the exit status says so.
class StopSignalsDuringTheJob {
 public:
  StopSignalsDuringTheJob() {
    struct sigaction action {};
    action.sa_handler = RequestStop;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < std::size(kStopSignals); ++i) {
      sigaction(kStopSignals[i], &action, &saved_[i]);
      // A signal the caller ignores (nohup's SIGHUP, a background job's SIGINT) stays ignored.
      if (saved_[i].sa_handler == SIG_IGN) sigaction(kStopSignals[i], &saved_[i], nullptr);
    }
  }
  ~StopSignalsDuringTheJob() {
    for (size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &saved_[i], nullptr);
    if (stop_signal != 0) {
      signal(stop_signal, SIG_DFL);
      raise(stop_signal);
    }
  }
  StopSignalsDuringTheJob(const StopSignalsDuringTheJob&) = delete;
  StopSignalsDuringTheJob& operator=(const StopSignalsDuringTheJob&) = delete;

 private:
  struct sigaction saved_[std::size(kStopSignals)];
};

std::vector<int64_t> RandomIds(const Workload& w, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> id(0, w.rows - 1);
  std::vector<int64_t> ids(w.batch);
  for (int64_t& v : ids) v = id(rng);
  return ids;
}

// Times pull, push and push_add of `tensor`, `iterations` batches each;
// `sync` runs before and after each timed phase. Returns seconds per op.
Result<nlohmann::json> TimeOps(DistTensor& tensor, const Workload& w, uint64_t seed,
                               const std::function<Status()>& sync) {
  std::vector<std::vector<int64_t>> batches;
  for (int i = 0; i < w.iterations; ++i) batches.push_back(RandomIds(w, seed * 1000 + i));
  std::vector<float> rows(w.batch * w.dim, 1.0f);
  nlohmann::json seconds;
  for (const char* op : {"pull", "push", "push_add"}) {
    FL_RETURN_IF_ERROR(sync());
    const auto start = Clock::now();
    for (const std::vector<int64_t>& ids : batches) {
      if (std::strcmp(op, "pull") == 0) {
        FL_ASSIGN_OR_RETURN(rows, tensor.PullHost(ids));
      } else {
        FL_RETURN_IF_ERROR(
            tensor.PushHost(ids, rows, std::strcmp(op, "push") == 0 ? WriteMode::kOverwrite : WriteMode::kAdd));
      }
    }
    FL_RETURN_IF_ERROR(sync());
    seconds[op] = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return seconds;
}

// The rank's arguments, as RunMpiLayout formats them: rows dim batch iterations.
Result<Workload> WorkloadFromArgs(const std::vector<std::string>& args) {
  if (args.size() != 4) {
    return InvalidArgumentError("dist_bench_rank: " + std::to_string(args.size()) +
                                " arguments; expected 4 (rows dim batch iterations)");
  }
  Workload w;
  FL_ASSIGN_OR_RETURN(w.rows, ParseWholeOrError<int64_t>(args[0], "dist_bench_rank: rows"));
  FL_ASSIGN_OR_RETURN(w.dim, ParseWholeOrError<int64_t>(args[1], "dist_bench_rank: dim"));
  FL_ASSIGN_OR_RETURN(w.batch, ParseWholeOrError<int64_t>(args[2], "dist_bench_rank: batch"));
  FL_ASSIGN_OR_RETURN(w.iterations, ParseWholeOrError<int>(args[3], "dist_bench_rank: iterations"));
  return w;
}

int BenchRank(const std::vector<std::string>& args) {
  Status status = [&]() -> Status {
    // Inside: a bad argument is reported like any other failure of the rank.
    FL_ASSIGN_OR_RETURN(const Workload w, WorkloadFromArgs(args));
    FL_ASSIGN_OR_RETURN(MpiOptions options, MpiOptionsFromEnv());
    FL_ASSIGN_OR_RETURN(std::unique_ptr<MpiTransport> transport, MpiTransport::Create(options));
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(w.rows, transport->world_size()));
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(*transport, "bench", book, w.dim));
    FL_ASSIGN_OR_RETURN(nlohmann::json seconds,
                        TimeOps(tensor, w, transport->rank() + 1, [&] { return transport->Barrier(); }));
    ReportFromRank(seconds.dump());
    return OkStatus();
  }();
  if (status.ok()) return 0;
  ReportFromRank(status.ToString());
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  _exit(1);
}
FL_REGISTER_CHILD("dist_bench_rank", BenchRank);

// The same bytes as one pull batch, copied contiguously in this process.
double MemcpySeconds(const Workload& w) {
  const size_t bytes = static_cast<size_t>(w.batch * w.dim) * sizeof(float);
  std::vector<char> source(bytes * 2, 1), target(bytes);
  const auto start = Clock::now();
  for (int i = 0; i < w.iterations; ++i) {
    std::memcpy(target.data(), source.data() + (i % 2) * bytes, bytes);
    asm volatile("" : : "r"(target.data()) : "memory");  // keep the copy
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs the MPI workload on `hosts` hosts (0: this machine, shared memory)
// and adds a row per op; returns false (after saying why) when it failed.
bool RunMpiLayout(const Workload& w, int ranks, int hosts,
                  const std::function<void(const std::string&, const std::string&, int, int, double)>& add) {
  // Declared first, so destroyed last: the hosts and the job are gone before a signal is raised again.
  StopSignalsDuringTheJob stop_signals;
  std::unique_ptr<NetnsHosts> netns;
  MpiJobOptions options;
  options.stop = &stop_requested;
  options.ranks = ranks;
  options.timeout = std::chrono::seconds(600);
  if (hosts > 0) {
    Result<std::unique_ptr<NetnsHosts>> made = NetnsHosts::Create(hosts);
    if (!made.ok()) {
      std::fprintf(stderr, "dist_bench: --hosts %d: %s\n", hosts, made.status().ToString().c_str());
      return false;
    }
    netns = std::move(*made);
    options.hosts = netns.get();
    for (int k = 0; k < hosts; ++k) options.ranks_per_host.push_back(ranks / hosts + (k < ranks % hosts ? 1 : 0));
  }
  std::fprintf(
      stderr, "dist_bench: %d MPI ranks on %s, %d batches of %lld rows per op and rank ...\n", ranks,
      hosts == 0 ? "this machine (shared memory)" : (std::to_string(hosts) + " namespace host(s) (TCP)").c_str(),
      w.iterations, static_cast<long long>(w.batch));
  if (stop_requested) {  // it came while the hosts were made
    std::fprintf(stderr, "dist_bench: stopped by signal %d before the MPI job started\n",
                 static_cast<int>(stop_signal));
    return false;
  }
  Result<MpiJob> job = RunMpiJob(
      "dist_bench_rank",
      {std::to_string(w.rows), std::to_string(w.dim), std::to_string(w.batch), std::to_string(w.iterations)}, options);
  if (job.ok() && job->stopped) {  // the signal is raised again on the way out
    std::fprintf(stderr, "dist_bench: stopped by signal %d; the MPI job was ended and its folders removed\n",
                 static_cast<int>(stop_signal));
    return false;
  }
  if (!job.ok() || job->exit_code != 0) {
    std::fprintf(stderr, "dist_bench: the MPI job failed: %s\n%s\n",
                 job.ok() ? ("mpirun exit " + std::to_string(job->exit_code)).c_str() : job.status().ToString().c_str(),
                 job.ok() ? job->output.c_str() : "");
    return false;
  }
  // Aggregate: every rank moved `batch` rows per iteration; the slowest rank sets the time.
  for (const char* op : {"pull", "push", "push_add"}) {
    double slowest = 0;
    for (const RankReport& report : job->reports) {
      slowest = std::max(slowest, nlohmann::json::parse(report.text)[op].get<double>());
    }
    add(hosts == 0 ? "mpi-shm" : "mpi-tcp", op, ranks, hosts == 0 ? 1 : hosts, slowest);
  }
  return true;
}

int Main(int argc, char** argv) {
  CLI::App app{"dist_bench: DistTensor pull/push throughput over MPI ranks vs an in-process memcpy"};
  Workload w;
  int ranks = 4;
  std::vector<int> host_counts;
  std::string hosts_text = "0";
  bool json = false;
  app.footer(
      "Exit status: 0 every layout ran; 1 a run failed (the MPI job, a host, the setup); 2 usage error; "
      "128+N stopped by signal N (SIGTERM, SIGINT, SIGHUP) after ending the MPI job");
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  app.add_option("--ranks", ranks, "MPI ranks, one partition each (default 4)")->check(IntInRange(1, 64));
  // One string, split here: CLI11's delimiter drops empty items ("0,,1" ran as "0,1").
  app.add_option("--hosts", hosts_text,
                 "Layouts, comma-separated: 0 = this machine over shared memory (default); N = N namespace hosts "
                 "over TCP (needs root)")
      ->type_name("N[,N...]");
  app.add_option("--rows", w.rows, "Rows of the tensor (default 400000)")->check(IntInRange<int64_t>(1, kInt64Max));
  app.add_option("--dim", w.dim, "Columns, float32 (default 128)")->check(IntInRange<int64_t>(1, 65536));
  app.add_option("--batch", w.batch, "Rows per pull or push (default 65536)")->check(IntInRange<int64_t>(1, kInt64Max));
  app.add_option("--iterations", w.iterations, "Batches per op (default 20)")
      ->check(IntInRange(1, std::numeric_limits<int>::max()));
  app.add_flag("--json", json, "Print the results as JSON on stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::istringstream hosts_list(hosts_text + ",");  // the ',' makes a trailing empty item visible
  const CLI::Validator host_count = IntInRange(0, 16);
  for (std::string item; std::getline(hosts_list, item, ',');) {
    if (const std::string why = host_count(item); !why.empty()) {
      std::fprintf(stderr, "--hosts: %s\n", why.c_str());
      return 2;
    }
    host_counts.push_back(*ParseWhole<int>(item));
  }
  std::set<int> layouts;
  for (int hosts : host_counts) {
    if (!layouts.insert(hosts).second) {
      std::fprintf(stderr, "dist_bench: --hosts lists %d twice; expected each layout once\n", hosts);
      return 2;
    }
  }
  for (int hosts : host_counts) {
    if (hosts > ranks) {
      std::fprintf(stderr, "dist_bench: --hosts %d is more than --ranks %d\n", hosts, ranks);
      return 2;
    }
  }
  // The tensor and a batch of rows, in bytes: both must fit in int64.
  for (auto [count, flag] : {std::make_pair(w.rows, "--rows"), std::make_pair(w.batch, "--batch")}) {
    int64_t bytes = 0;
    if (__builtin_mul_overflow(count, w.dim * int64_t{sizeof(float)}, &bytes)) {
      std::fprintf(stderr, "dist_bench: %s %lld x --dim %lld float32 rows overflow int64 bytes; expected fewer\n", flag,
                   static_cast<long long>(count), static_cast<long long>(w.dim));
      return 2;
    }
  }

  const double row_bytes = static_cast<double>(w.dim * sizeof(float));
  nlohmann::json results = nlohmann::json::array();
  auto add = [&](const std::string& what, const std::string& op, int processes, int hosts, double seconds) {
    const double rows = static_cast<double>(w.batch) * w.iterations * processes;
    results.push_back({{"transport", what},
                       {"op", op},
                       {"processes", processes},
                       {"hosts", hosts},
                       {"seconds", seconds},
                       {"rows_per_s", rows / seconds},
                       {"gb_per_s", rows * row_bytes / seconds / 1e9}});
  };

  std::fprintf(stderr, "dist_bench: in-process memcpy and transport (%lld x %lld rows) ...\n",
               static_cast<long long>(w.rows), static_cast<long long>(w.dim));
  add("memcpy", "copy", 1, 1, MemcpySeconds(w));
  Result<InProcessTransport> local = InProcessTransport::Create(ranks);
  Result<RangePartitionBook> book = RangePartitionBook::Even(w.rows, ranks);
  Result<DistTensor> tensor = local.ok() && book.ok() ? DistTensor::Create(*local, "bench", *book, w.dim)
                                                      : Result<DistTensor>(InternalError("setup"));
  Result<nlohmann::json> in_process =
      tensor.ok() ? TimeOps(*tensor, w, 1, [] { return OkStatus(); }) : Result<nlohmann::json>(tensor.status());
  if (!in_process.ok()) {
    std::fprintf(stderr, "dist_bench: %s\n", in_process.status().ToString().c_str());
    return 1;
  }
  for (auto& [op, seconds] : in_process->items()) add("in-process", op, 1, 1, seconds.get<double>());

  for (int hosts : host_counts) {
    if (!RunMpiLayout(w, ranks, hosts, add)) return 1;
  }

  if (json) {
    std::cout << nlohmann::json{{"rows", w.rows},    {"dim", w.dim},
                                {"batch", w.batch},  {"iterations", w.iterations},
                                {"ranks", ranks},    {"hosts", host_counts},
                                {"results", results}}
                     .dump(2)
              << "\n";
    return 0;
  }
  const double memcpy_gbs = results[0]["gb_per_s"].get<double>();
  std::printf("%-11s %-9s %9s %5s %14s %9s %12s\n", "transport", "op", "processes", "hosts", "rows/s", "GB/s",
              "vs memcpy");
  for (const auto& r : results) {
    std::printf("%-11s %-9s %9d %5d %14.0f %9.3f %12.3f\n", r["transport"].get<std::string>().c_str(),
                r["op"].get<std::string>().c_str(), r["processes"].get<int>(), r["hosts"].get<int>(),
                r["rows_per_s"].get<double>(), r["gb_per_s"].get<double>(), r["gb_per_s"].get<double>() / memcpy_gbs);
  }
  return 0;
}

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) {
  int exit_code = 0;
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  try {
    return faultline::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "dist_bench: out of memory for the tensor and batches that --rows, --dim and --batch ask "
                 "for; expected smaller values\n");
    return 1;
  }
}
