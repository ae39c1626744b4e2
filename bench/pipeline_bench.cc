// Google Benchmark binaries' worth of measurements for the pipeline:
// - multi-layer neighbor sampling on the CPU (seeds/s, sampled edges/s),
//   fanouts [15, 10, 5], batch 1024, uniform and weighted, 1 and 2 threads;
// - random 8-byte reads over the graph's indices array (the memory limit the
//   sampler runs into), 1 and 2 threads;
// - feature gather (index_select) of random rows, 128 float32 columns, next
//   to a memcpy of the same bytes (the practical limit);
// - data loader minibatches/s for num_workers 0, 1, 2 with fork and spawn.
// The graph comes from FAULTLINE_BENCH_GRAPH (a make_graph directory).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "bench/sampling_workload.h"
#include "reference/features/feature_store.h"
#include "reference/graph/csc_graph.h"
#include "reference/loader/data_loader.h"
#include "reference/loader/item_sampler.h"
#include "reference/process/child_registry.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

const char* GraphDir() {
  const char* dir = std::getenv("FAULTLINE_BENCH_GRAPH");
  return dir != nullptr && *dir ? dir : nullptr;
}

// The benchmark graph, loaded once.
const CscGraph* BenchGraph(std::string* error) {
  static std::unique_ptr<CscGraph> graph;
  static std::string load_error;
  if (graph == nullptr && load_error.empty()) {
    if (GraphDir() == nullptr) {
      load_error = "set FAULTLINE_BENCH_GRAPH to a graph directory (bazel run //bench:make_graph -- --out DIR)";
    } else {
      Result<CscGraph> loaded = CscGraph::Load(GraphDir());
      if (loaded.ok()) graph = std::make_unique<CscGraph>(std::move(loaded).value());
      else load_error = loaded.status().ToString();
    }
  }
  *error = load_error;
  return graph.get();
}

void BM_SampleMultiLayer(benchmark::State& state) {
  const bool weighted = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  if (weighted && !graph->has_weights()) return state.SkipWithError("the graph has no weights.npy");
  const auto batches = BenchSeedBatches(graph->num_nodes());
  int64_t edges = 0, seeds = 0, i = 0;
  for (auto _ : state) {
    const auto& batch = batches[i % kBenchBatchesInPool];
    auto layers = SampleMultiLayer(*graph, batch, kBenchFanouts, SamplingOptions{/*replace=*/false, weighted, /*rng_seed=*/i, threads});
    if (!layers.ok()) return state.SkipWithError(layers.status().ToString().c_str());
    for (const SampledLayer& layer : *layers) edges += static_cast<int64_t>(layer.subgraph.indices.size());
    seeds += kBenchBatch;
    ++i;
    benchmark::DoNotOptimize(layers);
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

// The memory limit the sampler runs into: random 8-byte reads over the
// graph's own indices array (the array the sampler picks from), independent
// of each other as the sampler's reads of different seeds are, with
// `threads` threads. The sampler's edges/s over these reads/s is how close it
// comes to the machine's limit.
void BM_RandomReads(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  const std::vector<int64_t>& indices = graph->indices();
  const uint64_t n = indices.size();
  constexpr int64_t kReadsPerThread = 1 << 22;
  int64_t reads = 0;
  for (auto _ : state) {
    std::vector<std::thread> pool;
    std::vector<int64_t> sums(threads);
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(t + 1), sum = 0;
        for (int64_t i = 0; i < kReadsPerThread; ++i) {
          x ^= x << 13;  // xorshift64: the next address never waits for a read
          x ^= x >> 7;
          x ^= x << 17;
          sum += static_cast<uint64_t>(indices[x % n]);
        }
        sums[t] = static_cast<int64_t>(sum);
      });
    }
    for (std::thread& th : pool) th.join();
    benchmark::DoNotOptimize(sums);
    reads += kReadsPerThread * threads;
  }
  state.counters["reads_per_s"] = benchmark::Counter(static_cast<double>(reads), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RandomReads)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

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

constexpr int64_t kLoaderBatches = 48;

// Times one epoch of kLoaderBatches minibatches after the first one (which
// includes worker start-up) has arrived.
void BM_DataLoader(benchmark::State& state) {
  if (GraphDir() == nullptr) return state.SkipWithError("set FAULTLINE_BENCH_GRAPH");
  LoaderOptions o;
  o.graph_dir = GraphDir();
  o.fanouts = kBenchFanouts;
  o.batch_size = kBenchBatch;
  o.num_items = kBenchBatch * (kLoaderBatches + 1);
  o.seed = 3;
  o.num_workers = static_cast<int>(state.range(0));
  o.start_method = state.range(1) == 0 ? StartMethod::kFork : StartMethod::kSpawn;
  int64_t batches = 0;
  for (auto _ : state) {
    auto loader = DataLoader::Create(o);
    if (!loader.ok()) return state.SkipWithError(loader.status().ToString().c_str());
    if (!(*loader)->Next().ok()) return state.SkipWithError("first minibatch failed");
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      auto next = (*loader)->Next();
      if (!next.ok()) return state.SkipWithError(next.status().ToString().c_str());
      if (!next->has_value()) break;
      ++batches;
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["minibatches_per_s"] = benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DataLoader)
    ->ArgNames({"workers", "spawn"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Iterations(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The loader's own sampling work, without the loader: the minibatches
// BM_DataLoader produces (same items, shuffle and per-minibatch random
// streams), sampled in this thread. BM_DataLoader/workers:0 divided by this
// is the loader's overhead; R-MAT puts the hubs at the low ids the loader's
// items are, so random seeds (BM_SampleMultiLayer) are a lighter workload.
void BM_SampleLoaderWorkload(benchmark::State& state) {
  std::string error;
  const CscGraph* graph = BenchGraph(&error);
  if (graph == nullptr) return state.SkipWithError(error.c_str());
  const uint64_t seed = 3;
  auto batches = MakeBatches(ItemSamplerOptions{kBenchBatch * (kLoaderBatches + 1), kBenchBatch, /*shuffle=*/true,
                                                /*drop_last=*/false, seed});
  if (!batches.ok()) return state.SkipWithError(batches.status().ToString().c_str());
  int64_t done = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t index = 1; index < static_cast<int64_t>(batches->size()); ++index) {  // as BM_DataLoader: after the first
      const uint64_t rng_seed = LoaderRngSeed(seed, index);
      auto layers = SampleMultiLayer(*graph, (*batches)[index], kBenchFanouts,
                                     SamplingOptions{/*replace=*/false, /*weighted=*/false, rng_seed, 1});
      if (!layers.ok()) return state.SkipWithError(layers.status().ToString().c_str());
      benchmark::DoNotOptimize(layers);
      ++done;
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["minibatches_per_s"] = benchmark::Counter(static_cast<double>(done), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SampleLoaderWorkload)->Iterations(2)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) {
  int exit_code = 0;
  // Spawned loader workers re-enter this binary.
  if (faultline::MaybeRunRegisteredChild(argc, argv, &exit_code)) return exit_code;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
