// Google Benchmark binaries' worth of measurements for the pipeline:
// - multi-layer neighbor sampling on the CPU (seeds/s, sampled edges/s),
//   fanouts [15, 10, 5], batch 1024, uniform and weighted, 1 and 2 threads;
// - random 8-byte reads over the graph's indices array (the memory limit the
//   sampler runs into), 1 and 2 threads, alone and paired with sampling
//   (the sampler's edges/s as a fraction of them);
// - feature gather (index_select) of random rows, 128 float32 columns, next
//   to a memcpy of the same bytes (the practical limit);
// - data loader minibatches/s for num_workers 0, 1, 2 with fork and spawn,
//   alone and paired with the inline loader (the speed-up over it), the
//   same sampling on one and two threads without the loader, and what a
//   minibatch costs on the wire on each side.
// The graph comes from FAULTLINE_BENCH_GRAPH (a make_graph directory).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "bench/bench_graph.h"
#include "bench/bench_main.h"
#include "bench/sampling_workload.h"
#include "kernels/weight_table.h"
#include "reference/features/feature_store.h"
#include "reference/graph/csc_graph.h"
#include "reference/loader/data_loader.h"
#include "reference/loader/item_sampler.h"
#include "reference/loader/minibatch.h"
#include "reference/loader/shared_memory.h"
#include "reference/process/child_registry.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

// The benchmark graph, loaded once. Only from FAULTLINE_BENCH_GRAPH, never
// generated as device_bench may: the loader benchmarks' workers read the
// same folder (BenchLoaderOptions).
const CscGraph* BenchGraph(std::string* error) {
  static std::unique_ptr<CscGraph> graph;
  static std::string load_error;
  if (graph == nullptr && load_error.empty()) {
    if (!BenchGraphDir()) {
      load_error = kBenchGraphHint;
    } else {
      Result<CscGraph> loaded = LoadBenchGraph();
      if (loaded.ok())
        graph = std::make_unique<CscGraph>(std::move(loaded).value());
      else
        load_error = loaded.status().ToString();
    }
  }
  *error = load_error;
  return graph.get();
}

// The sampler benchmarks' graph, for arguments (weighted, threads); nullptr
// once `state` is skipped with the reason.
const CscGraph* SamplerBenchGraph(benchmark::State& state) {
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) {
    state.SkipWithError(error.c_str());
    return nullptr;
  }
  if (state.range(0) != 0 && !graph->has_weights()) {
    state.SkipWithError("the graph has no weights.npy");
    return nullptr;
  }
  return graph;
}

// Samples minibatch `i` of the workload (batch i of the pool, random stream
// i) and returns its sampled edges.
Result<int64_t> SampleBenchMinibatch(const CscGraph& graph, const std::vector<std::vector<int64_t>>& batches, int64_t i,
                                     bool weighted, int threads) {
  const SamplingOptions options{/*replace=*/false, weighted, /*rng_seed=*/static_cast<uint64_t>(i), threads};
  FL_ASSIGN_OR_RETURN(std::vector<SampledLayer> layers,
                      SampleMultiLayer(graph, batches[i % kBenchBatchesInPool], kBenchFanouts, options));
  int64_t edges = 0;
  for (const SampledLayer& layer : layers) edges += static_cast<int64_t>(layer.subgraph.indices.size());
  return edges;
}

void BM_SampleMultiLayer(benchmark::State& state) {
  const bool weighted = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  const CscGraph* graph = SamplerBenchGraph(state);
  if (graph == nullptr) return;
  const auto batches = BenchSeedBatches(graph->num_nodes());
  int64_t edges = 0, seeds = 0, i = 0;
  for (auto _ : state) {
    Result<int64_t> sampled = SampleBenchMinibatch(*graph, batches, i++, weighted, threads);
    if (!sampled.ok()) return state.SkipWithError(sampled.status().ToString().c_str());
    edges += *sampled;
    seeds += kBenchBatch;
  }
  state.counters["seeds_per_s"] = benchmark::Counter(static_cast<double>(seeds), benchmark::Counter::kIsRate);
  state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleMultiLayer)
    ->ArgNames({"weighted", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);

// The median of the paired benchmarks' per-pair values (the upper one of
// an even count; NaN for none).
double Median(std::vector<double> values) {
  if (values.empty()) return std::nan("");
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// `reads` random 8-byte reads over `indices` (not empty) on `threads`
// threads, each read independent of the others as the sampler's reads of
// different seeds are; `salt` >= 0 picks the addresses. Returns a sum of the
// values read, so that the reads cannot be dropped.
int64_t RandomReads(const std::vector<int64_t>& indices, int64_t reads, int threads, int64_t salt = 0) {
  const uint64_t n = indices.size();
  std::vector<int64_t> sums(threads);
  auto read = [&](int t) {
    uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(salt * threads + t + 1), sum = 0;
    for (int64_t i = t; i < reads; i += threads) {
      x ^= x << 13;  // xorshift64: the next address never waits for a read
      x ^= x >> 7;
      x ^= x << 17;
      sum += static_cast<uint64_t>(indices[x % n]);
    }
    sums[t] = static_cast<int64_t>(sum);
  };
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(read, t);
  read(0);
  for (std::thread& helper : helpers) helper.join();
  int64_t total = 0;
  for (int64_t sum : sums) total += sum;
  return total;
}

// The memory limit the sampler runs into: random 8-byte reads over the
// graph's own indices array (the array the sampler picks from), with
// `threads` threads.
void BM_RandomReads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  if (graph->indices().empty()) return state.SkipWithError("the graph has no edges");
  constexpr int64_t kReadsPerThread = 1 << 22;
  int64_t reads = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(RandomReads(graph->indices(), kReadsPerThread * threads, threads));
    reads += kReadsPerThread * threads;
  }
  state.counters["reads_per_s"] = benchmark::Counter(static_cast<double>(reads), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RandomReads)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// The sampler's edges/s as a fraction of the memory limit, measured in
// pairs: each iteration samples whole minibatches for at least
// kSamplingWindow and makes as many random reads over the graph's indices as
// a window sampled edges, with as many threads. The two halves of a pair are
// at most a minibatch apart, so they see the same machine: on a shared VM
// the reads/s measured alone moved by a third between runs and by a fifth
// between consecutive half-seconds. Even pairs sample first and read as many
// as they sampled; odd pairs read first, as many as the previous window
// sampled, so that what one half leaves (cold caches, drift) falls on both
// sides alike. of_limit is the median over the pairs of (edges/s) /
// (reads/s); edges_per_s and reads_per_s are rates over all the pairs'
// halves, so they need not divide to it exactly.
void BM_SamplerOfLimit(benchmark::State& state) {
  constexpr auto kSamplingWindow = std::chrono::milliseconds(40);
  const bool weighted = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  const CscGraph* graph = SamplerBenchGraph(state);
  if (graph == nullptr) return;
  if (graph->indices().empty()) return state.SkipWithError("the graph has no edges");
  const auto batches = BenchSeedBatches(graph->num_nodes());
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  std::vector<double> fractions;
  double sampling_s = 0, reads_s = 0;
  int64_t edges = 0, reads = 0, i = 0, last_window_edges = 0;
  for (auto _ : state) {
    const int64_t pair = static_cast<int64_t>(fractions.size());
    auto time_reads = [&](int64_t count) {
      const auto start = Clock::now();
      benchmark::DoNotOptimize(RandomReads(graph->indices(), count, threads, pair));
      return seconds_since(start);
    };
    const bool reads_first = pair % 2 == 1;
    const int64_t pair_reads = reads_first ? last_window_edges : 0;
    double reading = reads_first ? time_reads(pair_reads) : 0;
    int64_t window_edges = 0;
    const auto start = Clock::now();
    do {
      Result<int64_t> sampled = SampleBenchMinibatch(*graph, batches, i++, weighted, threads);
      if (!sampled.ok()) return state.SkipWithError(sampled.status().ToString().c_str());
      window_edges += *sampled;
    } while (Clock::now() - start < kSamplingWindow);
    const double sampling = seconds_since(start);
    if (window_edges == 0) return state.SkipWithError("the seeds sampled no edges");
    const int64_t counted_reads = reads_first ? pair_reads : window_edges;
    if (!reads_first) reading = time_reads(counted_reads);
    fractions.push_back((static_cast<double>(window_edges) / sampling) /
                        (static_cast<double>(counted_reads) / reading));
    sampling_s += sampling;
    reads_s += reading;
    edges += window_edges;
    reads += counted_reads;
    last_window_edges = window_edges;
  }
  state.counters["of_limit"] = Median(fractions);
  state.counters["edges_per_s"] = static_cast<double>(edges) / sampling_s;
  state.counters["reads_per_s"] = static_cast<double>(reads) / reads_s;
  state.counters["pairs"] = static_cast<double>(fractions.size());
}
BENCHMARK(BM_SamplerOfLimit)
    ->ArgNames({"weighted", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(3.0);

// What the weight table costs against loading the graph it is built from:
// arg 0 times CscGraph::Load of the benchmark graph's folder (page cache
// warm after the first; the table is built inside it), arg 1 the table's
// build alone on the loaded arrays, on every core as Load builds it. Counters: seconds per run and the
// table's bytes per edge.
void BM_WeightTable(benchmark::State& state) {
  const std::optional<std::string> dir = BenchGraphDir();
  if (!dir) return state.SkipWithError("FAULTLINE_BENCH_GRAPH is not set: no graph folder to load");
  const bool build_only = state.range(0) != 0;
  const CscGraph* graph = build_only ? SamplerBenchGraph(state) : nullptr;
  if (build_only && graph == nullptr) return;
  std::vector<uint64_t> alias;
  std::vector<int32_t> fanouts;
  if (build_only) {
    alias.resize(graph->weights().size());
    fanouts.resize(static_cast<size_t>(graph->num_nodes()));
  }
  for (auto _ : state) {
    if (build_only) {
      kernels::sampling::BuildWeightTable(graph->indptr(), graph->weights(), alias.data(), fanouts.data(),
                                          static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      benchmark::DoNotOptimize(alias.data());
    } else {
      Result<CscGraph> loaded = CscGraph::Load(*dir);
      if (!loaded.ok()) return state.SkipWithError(loaded.status().ToString().c_str());
      if (!loaded->has_weights()) return state.SkipWithError("the graph has no weights.npy");
      benchmark::DoNotOptimize(loaded->weight_alias().data());
    }
  }
  state.counters["table_bytes_per_edge"] = static_cast<double>(sizeof(uint64_t));
  state.counters["table_bytes_per_node"] = static_cast<double>(sizeof(int32_t));
}
BENCHMARK(BM_WeightTable)->ArgName("build_only")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kTableRows = 1'000'000, kDim = 128, kGatherRows = 200'000;

void BM_GatherRows(benchmark::State& state) {
  std::vector<float> values(kTableRows * kDim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i & 0xffff);
  Result<Tensor> table = Tensor::FromVector(values, {kTableRows, kDim});
  values.clear();
  values.shrink_to_fit();
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> row(0, kTableRows - 1);
  std::vector<int64_t> picked(kGatherRows);
  for (int64_t& id : picked) id = row(rng);
  Result<Tensor> ids = Tensor::FromVector(picked);
  for (auto _ : state) {
    Result<Tensor> rows = IndexSelect(*table, *ids);
    if (!rows.ok()) return state.SkipWithError(rows.status().ToString().c_str());
    benchmark::DoNotOptimize(rows->raw_data());
  }
  state.SetBytesProcessed(state.iterations() * kGatherRows * kDim * static_cast<int64_t>(sizeof(float)));
}
BENCHMARK(BM_GatherRows)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same bytes as BM_GatherRows, copied contiguously into a fresh buffer.
void BM_MemcpySameBytes(benchmark::State& state) {
  const size_t bytes = kGatherRows * kDim * sizeof(float);
  std::vector<float> source(kTableRows * kDim, 1.0f);
  for (auto _ : state) {
    std::unique_ptr<float[]> out(new float[kGatherRows * kDim]);
    std::memcpy(out.get(), source.data() + (state.iterations() % 4) * kGatherRows * kDim / 4, bytes);
    benchmark::DoNotOptimize(out.get());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_MemcpySameBytes)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr int64_t kLoaderBatches = 96;
// Minibatches delivered before the clock starts: each worker's first
// kPrefetchPerWorker (two workers), so that every worker has started (a
// spawned worker loads its own copy of the graph first) and every segment
// slot holds its first minibatch (a slot's first minibatch allocates its
// shared memory, ~3,500 pages: 10-15 ms in each worker, once per loader).
// Both are start-up, not throughput; BM_DataLoader's startup_ms reports it.
// (One per worker would leave the second slots' start-up inside the clock.)
constexpr int64_t kLoaderWarmup = 2 * kPrefetchPerWorker;
constexpr uint64_t kLoaderSeed = 3;

// The loader benchmarks' minibatches: BM_DataLoader's items and shuffle.
Result<std::vector<std::vector<int64_t>>> LoaderWorkloadBatches() {
  return MakeBatches(ItemSamplerOptions{kBenchBatch * (kLoaderWarmup + kLoaderBatches), kBenchBatch,
                                        /*shuffle=*/true, /*drop_last=*/false, kLoaderSeed});
}

// Samples minibatch `index` of them as the loader does (its own random stream).
Result<std::vector<SampledLayer>> SampleLoaderMinibatch(const CscGraph& graph,
                                                        const std::vector<std::vector<int64_t>>& batches,
                                                        int64_t index) {
  return SampleMultiLayer(graph, batches[index], kBenchFanouts,
                          SamplingOptions{/*replace=*/false, /*weighted=*/false, LoaderRngSeed(kLoaderSeed, index), 1});
}

// The loader benchmarks' options: the benchmark graph, the sampling
// workload's fanouts and batch, kLoaderWarmup + kLoaderBatches minibatches.
LoaderOptions BenchLoaderOptions(int num_workers, StartMethod start_method) {
  LoaderOptions o;
  o.graph_dir = BenchGraphDir().value_or("");  // the callers skip when it is unset
  o.fanouts = kBenchFanouts;
  o.batch_size = kBenchBatch;
  o.num_items = kBenchBatch * (kLoaderWarmup + kLoaderBatches);
  o.seed = kLoaderSeed;
  o.num_workers = num_workers;
  o.start_method = start_method;
  return o;
}

// The CPU seconds process `pid` (0: this one) has used so far, from its
// CPU-time clock (nanoseconds, where /proc's ticks are 10 ms).
double ProcessCpuSeconds(pid_t pid) {
  clockid_t clock = 0;
  timespec now{};
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &now) != 0) return std::nan("");
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// What an epoch's start-up took, and the CPU seconds the loader's processes
// used over the timed minibatches.
struct EpochCosts {
  double startup = 0;  // seconds from Create to the end of the warm-up
  double main = 0;     // the main process: taking minibatches
  double workers = 0;  // all workers together: producing them
  // Per worker, seconds over the timed minibatches that it was runnable but
  // another process had its core, and that it slept (waiting for a task).
  std::vector<double> waited_for_core, waited_for_task;
};

// Seconds process `pid`'s main thread has run and has waited on a run queue
// so far, from /proc/PID/schedstat; {NaN, NaN} where the kernel does not
// keep them. A worker samples on its main thread at the loader's default
// sampler_threads = 1 (with more, this counts the first thread only).
std::pair<double, double> RunAndQueueSeconds(pid_t pid) {
  const double unknown = std::nan("");
  FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/schedstat").c_str(), "r");
  if (file == nullptr) return {unknown, unknown};
  unsigned long long run_ns = 0, queued_ns = 0;
  const bool read = std::fscanf(file, "%llu %llu", &run_ns, &queued_ns) == 2;
  std::fclose(file);
  if (!read) return {unknown, unknown};
  return {1e-9 * static_cast<double>(run_ns), 1e-9 * static_cast<double>(queued_ns)};
}

// How the benchmark's consumer takes minibatches: copied out (Next) or
// viewed where they lie (NextView).
enum class Take { kCopy, kView };

// Takes the loader's next minibatch as `take` says; returns false after the last.
Result<bool> TakeNext(DataLoader& loader, Take take) {
  if (take == Take::kView) {
    FL_ASSIGN_OR_RETURN(std::optional<MiniBatchView> view, loader.NextView());
    benchmark::DoNotOptimize(view);
    return view.has_value();
  }
  FL_ASSIGN_OR_RETURN(std::optional<MiniBatch> batch, loader.Next());
  benchmark::DoNotOptimize(batch);
  return batch.has_value();
}

// Creates a loader, takes kLoaderWarmup minibatches, then returns the
// seconds the other kLoaderBatches take. Adds the start-up's seconds and the
// CPU seconds its processes used over the timed minibatches to `*costs`
// when set.
Result<double> TimeLoaderEpoch(const LoaderOptions& o, Take take, EpochCosts* costs = nullptr) {
  const auto created = std::chrono::steady_clock::now();
  FL_ASSIGN_OR_RETURN(std::unique_ptr<DataLoader> loader, DataLoader::Create(o));
  for (int64_t warmup = 0; warmup < kLoaderWarmup; ++warmup) {
    FL_ASSIGN_OR_RETURN(bool taken, TakeNext(*loader, take));
    if (!taken) return InternalError("the loader ended during the warm-up");
  }
  const std::vector<pid_t> workers = loader->worker_pids();
  auto workers_cpu = [&] {
    double sum = 0;
    for (pid_t pid : workers) sum += ProcessCpuSeconds(pid);
    return sum;
  };
  std::vector<std::pair<double, double>> scheduled;
  for (pid_t pid : workers) scheduled.push_back(RunAndQueueSeconds(pid));
  const auto start = std::chrono::steady_clock::now();
  const double main_start = ProcessCpuSeconds(0), workers_start = workers_cpu();
  if (costs != nullptr) costs->startup += std::chrono::duration<double>(start - created).count();
  int64_t batches = 0;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool taken, TakeNext(*loader, take));
    if (!taken) break;
    ++batches;
  }
  if (batches != kLoaderBatches) {
    return InternalError("the loader gave " + std::to_string(batches) + " timed minibatches, expected " +
                         std::to_string(kLoaderBatches));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (costs != nullptr) {  // before the loader ends: its workers exit with it
    costs->main += ProcessCpuSeconds(0) - main_start;
    costs->workers += workers_cpu() - workers_start;
    costs->waited_for_core.resize(workers.size());
    costs->waited_for_task.resize(workers.size());
    for (size_t w = 0; w < workers.size(); ++w) {
      const auto [run, queued] = RunAndQueueSeconds(workers[w]);
      costs->waited_for_core[w] += queued - scheduled[w].second;
      costs->waited_for_task[w] += seconds - (run - scheduled[w].first) - (queued - scheduled[w].second);
    }
  }
  return seconds;
}

// Times the kLoaderBatches minibatches that follow the first kLoaderWarmup.
void BM_DataLoader(benchmark::State& state) {
  if (!BenchGraphDir()) return state.SkipWithError("set FAULTLINE_BENCH_GRAPH");
  const LoaderOptions o = BenchLoaderOptions(static_cast<int>(state.range(0)),
                                             state.range(1) == 0 ? StartMethod::kFork : StartMethod::kSpawn);
  const Take take = state.range(2) == 0 ? Take::kCopy : Take::kView;
  int64_t batches = 0;
  EpochCosts costs;
  double seconds_total = 0;
  for (auto _ : state) {
    Result<double> seconds = TimeLoaderEpoch(o, take, &costs);
    if (!seconds.ok()) return state.SkipWithError(seconds.status().ToString().c_str());
    state.SetIterationTime(*seconds);
    seconds_total += *seconds;
    batches += kLoaderBatches;
  }
  state.counters["minibatches_per_s"] = benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
  // What the main process spends per minibatch (with workers: taking it
  // from shared memory), on a core the workers share.
  state.counters["main_cpu_ms_per_batch"] = 1e3 * costs.main / static_cast<double>(batches);
  // Create and the kLoaderWarmup minibatches before the clock, per epoch.
  state.counters["startup_ms"] = 1e3 * costs.startup / static_cast<double>(state.iterations());
  // With workers: what each costs per minibatch, and the share of the time
  // they were on a core (below 1: they waited for a task or for a core).
  if (o.num_workers > 0) {
    state.counters["worker_cpu_ms_per_batch"] = 1e3 * costs.workers / static_cast<double>(batches);
    state.counters["workers_busy"] = costs.workers / (seconds_total * o.num_workers);
    // Where each worker's other time went, as shares of the wall time: an
    // uneven split shows which worker the main process displaces, and that
    // the other, dealt every num_workers-th minibatch, then waits for it.
    for (int w = 0; w < o.num_workers; ++w) {
      const std::string worker = "worker" + std::to_string(w);
      state.counters[worker + "_waited_for_core"] = costs.waited_for_core[w] / seconds_total;
      state.counters[worker + "_waited_for_task"] = costs.waited_for_task[w] / seconds_total;
    }
  }
}
// The loader configurations with workers: 1 and 2, forked and spawned, the
// consumer copying minibatches out (Next) or viewing them (NextView).
void WithWorkers(benchmark::internal::Benchmark* b) {
  b->ArgNames({"workers", "spawn", "view"});
  for (int view : {0, 1}) {
    for (int spawn : {0, 1}) {
      for (int workers : {1, 2}) b->Args({workers, spawn, view});
    }
  }
}
BENCHMARK(BM_DataLoader)
    ->Args({0, 0, 0})
    ->Apply(WithWorkers)
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// One pair of a paired benchmark: times `base` and `other` (each returns its
// seconds) back to back, `base` first in even pairs and last in odd ones,
// so that what the earlier side leaves (drift, warm or cold caches) falls on
// both sides alike. Returns {base seconds, other seconds}.
template <typename Base, typename Other>
Result<std::pair<double, double>> TimePair(int64_t pair, const Base& base, const Other& other) {
  double base_s = 0, other_s = 0;
  if (pair % 2 == 1) {
    FL_ASSIGN_OR_RETURN(other_s, other());
  }
  FL_ASSIGN_OR_RETURN(base_s, base());
  if (pair % 2 == 0) {
    FL_ASSIGN_OR_RETURN(other_s, other());
  }
  return std::make_pair(base_s, other_s);
}

// The loader with workers against the inline loader, measured in pairs: each
// iteration times an inline epoch and an epoch with `workers` workers, back
// to back (TimePair), so that both see the same machine (separate runs of
// BM_DataLoader on this shared VM differed by up to 15 %). vs_inline is the
// median over the pairs of inline time / workers time.
void BM_LoaderVsInline(benchmark::State& state) {
  if (!BenchGraphDir()) return state.SkipWithError("set FAULTLINE_BENCH_GRAPH");
  const LoaderOptions inline_options = BenchLoaderOptions(0, StartMethod::kFork);
  const LoaderOptions with_workers = BenchLoaderOptions(static_cast<int>(state.range(0)),
                                                        state.range(1) == 0 ? StartMethod::kFork : StartMethod::kSpawn);
  // Both sides take minibatches alike (an inline view holds the minibatch
  // the main process built: no copy either way).
  const Take take = state.range(2) == 0 ? Take::kCopy : Take::kView;
  std::vector<double> ratios;
  for (auto _ : state) {
    auto seconds = TimePair(
        static_cast<int64_t>(ratios.size()), [&] { return TimeLoaderEpoch(inline_options, take); },
        [&] { return TimeLoaderEpoch(with_workers, take); });
    if (!seconds.ok()) return state.SkipWithError(seconds.status().ToString().c_str());
    ratios.push_back(seconds->first / seconds->second);
    state.SetIterationTime(seconds->first + seconds->second);
  }
  state.counters["vs_inline"] = Median(ratios);
  // The spread of the pairs: on this shared VM one pair in five or ten can
  // stall (docs/benchmarks.md, "Data loader").
  if (!ratios.empty()) {
    state.counters["vs_inline_min"] = *std::min_element(ratios.begin(), ratios.end());
    state.counters["vs_inline_max"] = *std::max_element(ratios.begin(), ratios.end());
  }
}
BENCHMARK(BM_LoaderVsInline)->Apply(WithWorkers)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);

// Samples the minibatches after the warm-up on `copies` threads, dealt
// round-robin, and returns the seconds that takes.
Result<double> TimeSamplerCopies(const CscGraph& graph, const std::vector<std::vector<int64_t>>& batches, int copies) {
  const int64_t num_batches = static_cast<int64_t>(batches.size());
  auto sample = [&](int64_t index) { return SampleLoaderMinibatch(graph, batches, index); };
  std::vector<Status> failed(copies, OkStatus());
  // Each thread first samples a warm-up minibatch (untimed, as the loader's
  // workers have before the clock starts), so that its reused tables exist.
  std::atomic<int> warm{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int copy = 0; copy < copies; ++copy) {
    pool.emplace_back([&, copy] {
      auto warmup = sample(copy % kLoaderWarmup);
      if (!warmup.ok()) failed[copy] = warmup.status();
      ++warm;
      while (!go.load()) std::this_thread::yield();
      for (int64_t index = kLoaderWarmup + copy; index < num_batches && failed[copy].ok(); index += copies) {
        auto layers = sample(index);  // dealt as BM_DataLoader deals them
        if (!layers.ok()) failed[copy] = layers.status();
        benchmark::DoNotOptimize(layers);
      }
    });
  }
  while (warm.load() < copies) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go = true;
  for (std::thread& thread : pool) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Status& status : failed) FL_RETURN_IF_ERROR(status);
  return seconds;
}

// The loader's own sampling work, without the loader: the minibatches
// BM_DataLoader produces (same items, shuffle and per-minibatch random
// streams), dealt round-robin to `copies` threads of this process as the
// loader deals them to its workers. copies:1 is the bare sampling that
// BM_DataLoader/workers:0 and workers:1 are measured against; copies:2 is what
// two samplers at once get from this machine (two cores that share the L3
// cache and the memory), the bound for workers:2. R-MAT puts the hubs at the
// low ids the loader's items are, so random seeds (BM_SampleMultiLayer) are a
// lighter workload.
void BM_SampleLoaderWorkload(benchmark::State& state) {
  const int copies = static_cast<int>(state.range(0));
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  auto batches = LoaderWorkloadBatches();
  if (!batches.ok()) return state.SkipWithError(batches.status().ToString().c_str());
  int64_t done = 0;
  for (auto _ : state) {
    Result<double> seconds = TimeSamplerCopies(*graph, *batches, copies);
    if (!seconds.ok()) return state.SkipWithError(seconds.status().ToString().c_str());
    state.SetIterationTime(*seconds);
    done += static_cast<int64_t>(batches->size()) - kLoaderWarmup;
  }
  state.counters["minibatches_per_s"] = benchmark::Counter(static_cast<double>(done), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleLoaderWorkload)
    ->ArgName("copies")
    ->Arg(1)
    ->Arg(2)
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// Two samplers against one, in pairs as BM_LoaderVsInline measures the
// loader: each iteration samples the workload on one thread and on two
// (TimePair). vs_one is the median over the pairs of one's time / two's
// time: what two cores give this workload. Two workers can reach about
// vs_one x (inline time / bare time) of the inline loader.
void BM_TwoSamplersVsOne(benchmark::State& state) {
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  auto batches = LoaderWorkloadBatches();
  if (!batches.ok()) return state.SkipWithError(batches.status().ToString().c_str());
  std::vector<double> ratios;
  for (auto _ : state) {
    auto seconds = TimePair(
        static_cast<int64_t>(ratios.size()), [&] { return TimeSamplerCopies(*graph, *batches, 1); },
        [&] { return TimeSamplerCopies(*graph, *batches, 2); });
    if (!seconds.ok()) return state.SkipWithError(seconds.status().ToString().c_str());
    ratios.push_back(seconds->first / seconds->second);
    state.SetIterationTime(seconds->first + seconds->second);
  }
  state.counters["vs_one"] = Median(ratios);
  if (!ratios.empty()) {
    state.counters["vs_one_min"] = *std::min_element(ratios.begin(), ratios.end());
    state.counters["vs_one_max"] = *std::max_element(ratios.begin(), ratios.end());
  }
}
BENCHMARK(BM_TwoSamplersVsOne)->Iterations(5)->UseManualTime()->Unit(benchmark::kMillisecond);

// What a minibatch costs on its way from a worker to the main process, each
// side alone, for a minibatch of the loader's workload (BM_DataLoader's
// second; no features). side 0 encodes it whole into a shared memory
// segment (what a worker paid on top of the sampling before it wrote each
// layer into its segment as it sampled it; the device path still does).
// The main process's side, per minibatch: side 1 views it in the segment
// (NextView: the checks only), side 2 also copies it out and frees the copy
// (Next, for a consumer that drops it).
void BM_MiniBatchWire(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0));
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  auto batches = LoaderWorkloadBatches();
  if (!batches.ok()) return state.SkipWithError(batches.status().ToString().c_str());
  MiniBatch batch;
  batch.index = 1;
  batch.seeds = (*batches)[1];
  auto layers = SampleLoaderMinibatch(*graph, *batches, 1);
  if (!layers.ok()) return state.SkipWithError(layers.status().ToString().c_str());
  batch.layers = std::move(layers).value();
  // A memfd, as a loader's slot; each end its own descriptor.
  const std::string name = "/faultline-bench-wire";
  Result<int> fd = CreateUnlinkedSegment(name);
  if (!fd.ok()) return state.SkipWithError(fd.status().ToString().c_str());
  SegmentWriter writer(name, *fd);
  SegmentReader reader(name, dup(*fd));
  Status written = WriteMiniBatch(batch, writer);
  if (!written.ok()) return state.SkipWithError(written.ToString().c_str());
  for (auto _ : state) {
    if (side > 0) {
      Result<MiniBatchView> view = ReadMiniBatch(reader);
      if (!view.ok()) return state.SkipWithError(view.status().ToString().c_str());
      if (side == 2) {
        MiniBatch copy = view->ToMiniBatch();
        benchmark::DoNotOptimize(copy);
      }
      benchmark::DoNotOptimize(view);
    } else {
      written = WriteMiniBatch(batch, writer);
      if (!written.ok()) return state.SkipWithError(written.ToString().c_str());
    }
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(EncodeMiniBatch(batch)->size()));
}
BENCHMARK(BM_MiniBatchWire)->ArgName("side")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) {
  int exit_code = 0;
  // Spawned loader workers re-enter this binary.
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  return faultline::RunBenchmarksMain(argc, argv, "pipeline_bench");
}
