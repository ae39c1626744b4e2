// The device path, measured against its limits:
// - multi-layer sampling ([15, 10, 5], batch 1024) on the device, with the
//   graph in device memory and in pinned host memory, next to the CPU sampler
//   on the same graph and seeds (sampled edges/s);
// - a whole device minibatch: the layers kept on the device and the last
//   layer's features gathered there (ms per minibatch);
// - feature gather (index_select, 200 000 random rows of a 1 000 000 x 128
//   float32 table) from device memory and from pinned host memory, next to a
//   device-to-device copy of the same bytes (the physical limit: GB/s counts
//   the bytes gathered, as the copy counts the bytes copied).
// Runtime: FAULTLINE_RUNTIME (default auto: cuda when a GPU is usable).
// Graph: FAULTLINE_BENCH_GRAPH (a make_graph folder), else the same R-MAT
// graph generated in memory (2 M nodes, 50 M edges, seed 1, as make_graph).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "bench/bench_graph.h"
#include "bench/bench_main.h"
#include "bench/sampling_workload.h"
#include "reference/features/feature_store.h"
#include "reference/graph/csc_graph.h"
#include "reference/runtime/runtime.h"
#include "reference/sampling/device_sampling.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

constexpr int64_t kTableRows = 1'000'000, kDim = 128, kGatherRows = 200'000;

// Fails the whole run: a device benchmark that cannot reach its device must
// not print numbers that look like results.
[[noreturn]] void Die(const std::string& what, const Status& status) {
  std::fprintf(stderr, "device_bench: %s: %s\n", what.c_str(), status.ToString().c_str());
  std::exit(1);
}

DeviceRuntime& Runtime() {
  static DeviceRuntime* runtime = [] {
    Result<RuntimeKind> kind = RuntimeKindFromEnv();
    if (!kind.ok()) Die("FAULTLINE_RUNTIME", kind.status());
    if (*kind == RuntimeKind::kCpu) Die("FAULTLINE_RUNTIME", InvalidArgumentError("needs simcuda or cuda, got cpu"));
    DeviceRuntime& r = GetRuntime(*kind);
    Result<int> count = r.GetDeviceCount();
    if (!count.ok()) Die(std::string("no usable ") + r.name() + " device", count.status());
    if (*count < 1) Die(std::string("no usable ") + r.name() + " device", UnavailableError("0 devices"));
    std::fprintf(stderr, "device_bench: runtime %s, %d device(s)\n", r.name(), *count);
    return &r;
  }();
  return *runtime;
}

const CscGraph& Graph() {
  static const CscGraph* graph = [] {
    Result<CscGraph> g = LoadBenchGraph();  // generated when FAULTLINE_BENCH_GRAPH is unset
    if (!g.ok()) Die("benchmark graph", g.status());
    return new CscGraph(std::move(g).value());
  }();
  return *graph;
}

const DeviceGraph& PlacedGraph(GraphPlacement placement) {
  static std::unique_ptr<DeviceGraph> placed[2];
  auto& slot = placed[placement == GraphPlacement::kDevice ? 0 : 1];
  if (slot == nullptr) {
    Result<DeviceGraph> g = DeviceGraph::Create(Graph(), Runtime(), placement);
    if (!g.ok()) Die("placing the graph", g.status());
    slot = std::make_unique<DeviceGraph>(std::move(g).value());
  }
  return *slot;
}

// What the runtime counted since it was made: per minibatch, a GPU run's
// host round trips (DeviceRuntime::host_waits), bytes read back, launches
// and cudaMalloc/cudaFree calls, which simcuda counts as a GPU would; and
// the milliseconds the host spent in those waits (host_wait_ns: with the
// row's time, whether the device or the host's launches set the pace; not
// a GPU's on simcuda, whose kernels run at their launch).
class RuntimeCounts {
 public:
  RuntimeCounts()
      : waits_(Runtime().host_waits()),
        wait_ns_(Runtime().host_wait_ns()),
        bytes_(Runtime().bytes_to_host()),
        launches_(Runtime().launches()),
        alloc_calls_(Runtime().device_alloc_calls()) {}
  void Report(benchmark::State& state, int64_t minibatches) const {
    if (minibatches <= 0) return;
    auto per_minibatch = [&](uint64_t now, uint64_t then) {
      return static_cast<double>(now - then) / static_cast<double>(minibatches);
    };
    state.counters["host_waits_per_minibatch"] = per_minibatch(Runtime().host_waits(), waits_);
    state.counters["host_wait_ms_per_minibatch"] = per_minibatch(Runtime().host_wait_ns(), wait_ns_) * 1e-6;
    state.counters["bytes_to_host_per_minibatch"] = per_minibatch(Runtime().bytes_to_host(), bytes_);
    state.counters["launches_per_minibatch"] = per_minibatch(Runtime().launches(), launches_);
    state.counters["device_alloc_calls_per_minibatch"] = per_minibatch(Runtime().device_alloc_calls(), alloc_calls_);
  }

 private:
  uint64_t waits_, wait_ns_, bytes_, launches_, alloc_calls_;
};

// where: 0 device memory, 1 pinned host memory, 2 the CPU sampler (threads
// = every core of this machine). workspace (device only): 1 keeps one
// DeviceSamplingWorkspace from minibatch to minibatch (what the loader
// does), 0 lets every call allocate and free its own buffers, 2 keeps one
// whose bounded_hop_words is 0: every hop waits for its counts (what a hop
// larger than its bound costs). kept (device, one workspace): 1 leaves the
// layers on the device (SampleMultiLayerKeptOnDevice), 0 reads them back
// to the host.
void BM_SampleMultiLayer(benchmark::State& state) {
  const int where = static_cast<int>(state.range(0));
  const bool weighted = state.range(1) != 0;
  const bool keep_workspace = state.range(2) != 0, waits_each_hop = state.range(2) == 2;
  const bool kept = state.range(3) != 0;
  const auto batches = BenchSeedBatches(Graph().num_nodes());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const DeviceGraph* placed =
      where == 2 ? nullptr : &PlacedGraph(where == 0 ? GraphPlacement::kDevice : GraphPlacement::kPinnedHost);
  DeviceSamplingWorkspace workspace(DeviceSamplingWorkspace::Growth::kQuarterMore,
                                    waits_each_hop ? 0 : DeviceSamplingWorkspace::kDefaultBoundedHopWords);
  if (placed != nullptr) {  // one untimed minibatch first: the workspace's buffers, the graph's caches
    SamplingOptions options{/*replace=*/false, weighted, /*rng_seed=*/0, cores};
    auto layers = SampleMultiLayerOnDevice(*placed, batches[0], kBenchFanouts, options, nullptr,
                                           keep_workspace ? &workspace : nullptr);
    if (!layers.ok()) Die("sampling", layers.status());
  }
  int64_t edges = 0, i = 0;
  const RuntimeCounts counts;
  for (auto _ : state) {
    const auto& batch = batches[i % kBenchBatchesInPool];
    SamplingOptions options{/*replace=*/false, weighted, /*rng_seed=*/static_cast<uint64_t>(i), cores};
    if (kept) {
      auto layers = SampleMultiLayerKeptOnDevice(*placed, batch, kBenchFanouts, options, nullptr, workspace);
      if (!layers.ok()) Die("sampling", layers.status());
      for (const DeviceSampledLayer& layer : *layers) edges += layer.indices.numel();
      ++i;
      continue;
    }
    auto layers = placed != nullptr ? SampleMultiLayerOnDevice(*placed, batch, kBenchFanouts, options, nullptr,
                                                               keep_workspace ? &workspace : nullptr)
                                    : SampleMultiLayer(Graph(), batch, kBenchFanouts, options);
    if (!layers.ok()) Die("sampling", layers.status());
    for (const SampledLayer& layer : *layers) edges += static_cast<int64_t>(layer.subgraph.indices.size());
    ++i;
    benchmark::DoNotOptimize(layers);
  }
  const std::string buffers = std::string(keep_workspace ? ", one workspace" : ", buffers per call") +
                              (waits_each_hop ? " waiting for every hop's counts" : "") +
                              (kept ? ", layers kept on the device" : "");
  state.SetLabel(where == 0   ? "graph in device memory" + buffers
                 : where == 1 ? "graph pinned, read through UVA" + buffers
                              : "CPU sampler, " + std::to_string(cores) + " threads");
  if (keep_workspace) {
    state.counters["workspace_allocations"] = static_cast<double>(workspace.allocations());
    state.counters["workspace_mb"] = static_cast<double>(workspace.bytes()) / 1e6;
  }
  if (placed != nullptr) counts.Report(state, i);
  state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
}
// Each device row kept on the device, read back, and with buffers per call
// back to back, so that the three see the same device state; in device
// memory, kept also with a wait for every hop's counts.
void SamplerRows(benchmark::internal::Benchmark* b) {
  b->ArgNames({"where", "weighted", "workspace", "kept"});
  for (int weighted : {0, 1}) {
    for (int where : {0, 1}) {
      b->Args({where, weighted, 1, 1});
      if (where == 0) b->Args({where, weighted, 2, 1});
      b->Args({where, weighted, 1, 0});
      b->Args({where, weighted, 0, 0});
    }
    b->Args({2, weighted, 0, 0});
  }
}
BENCHMARK(BM_SampleMultiLayer)->Apply(SamplerRows)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

Tensor FeatureTable(bool pinned, int64_t rows = kTableRows) {
  std::vector<float> values(static_cast<size_t>(rows * kDim));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i & 0xffff);
  Result<Tensor> table = pinned ? Tensor::FromVector(values, {rows, kDim})
                                : Tensor::FromVectorOn(values, Device::Cuda(0), &Runtime(), {rows, kDim});
  if (!table.ok()) Die("feature table", table.status());
  if (pinned) {
    Status s = table->Pin(Runtime());
    if (!s.ok()) Die("pinning the feature table", s);
  }
  return std::move(table).value();
}

constexpr size_t kGatherBytes = kGatherRows * kDim * sizeof(float);

Tensor DeviceBuffer() {
  Result<Tensor> out = Tensor::Empty(DType::kFloat32, {kGatherRows, kDim}, Device::Cuda(0), &Runtime());
  if (!out.ok()) Die("allocate", out.status());
  return std::move(out).value();
}

// pinned: 0 table in device memory, 1 table pinned in host memory.
// into: 0 IndexSelect (allocates its result), 1 IndexSelectInto one buffer
// allocated before timing, with a GatherScratch (allocates nothing).
void BM_Gather(benchmark::State& state) {
  const bool pinned = state.range(0) == 1, into = state.range(1) == 1;
  Tensor table = FeatureTable(pinned);
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> row(0, kTableRows - 1);
  std::vector<int64_t> picked(kGatherRows);
  for (int64_t& id : picked) id = row(rng);
  Result<Tensor> ids = Tensor::FromVectorOn(picked, Device::Cuda(0), &Runtime());
  if (!ids.ok()) Die("ids", ids.status());
  Tensor out = DeviceBuffer();
  GatherScratch scratch;
  for (auto _ : state) {
    if (into) {
      Status gathered = IndexSelectInto(table, *ids, out, &scratch);
      if (!gathered.ok()) Die("gather", gathered);
    } else {
      Result<Tensor> rows = IndexSelect(table, *ids);
      if (!rows.ok()) Die("gather", rows.status());
      out = std::move(rows).value();
    }
    Status synced = Runtime().DeviceSynchronize();
    if (!synced.ok()) Die("synchronize", synced);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetLabel(std::string(pinned ? "table pinned, read through UVA" : "table in device memory") +
                 (into ? ", into one buffer" : ""));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kGatherBytes));
}
BENCHMARK(BM_Gather)
    ->ArgNames({"pinned", "into"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A whole device minibatch, nothing of it read back: the layers sampled and
// kept on the device (graph in device memory), then the kDim float32
// features of the last layer's unique nodes gathered from a table of one
// row per node, in device memory, into a buffer kept from minibatch to
// minibatch (IndexSelectInto into its Prefix, with a GatherScratch: its
// one wait covers the check and the gather). What a training step on the
// device starts from.
void BM_DeviceMiniBatch(benchmark::State& state) {
  const bool weighted = state.range(0) != 0;
  const DeviceGraph& placed = PlacedGraph(GraphPlacement::kDevice);
  const Tensor table = FeatureTable(/*pinned=*/false, Graph().num_nodes());
  const auto batches = BenchSeedBatches(Graph().num_nodes());
  DeviceSamplingWorkspace workspace;
  Tensor features;  // grown to a quarter more than the largest minibatch so far
  int64_t edges = 0, rows = 0, i = 0, warm_up = 1;
  GatherScratch scratch;
  std::optional<RuntimeCounts> counts;
  while (i < warm_up || state.KeepRunning()) {  // one untimed minibatch first, as BM_SampleMultiLayer
    if (i == warm_up) counts.emplace();
    const SamplingOptions options{/*replace=*/false, weighted, /*rng_seed=*/static_cast<uint64_t>(i)};
    auto layers = SampleMultiLayerKeptOnDevice(placed, batches[i % kBenchBatchesInPool], kBenchFanouts, options,
                                               nullptr, workspace);
    if (!layers.ok()) Die("sampling", layers.status());
    const Tensor& nodes = layers->back().unique_nodes;
    if (features.numel() == 0 || features.shape()[0] < nodes.numel()) {
      features = Tensor();
      Result<Tensor> grown =
          Tensor::Empty(DType::kFloat32, {nodes.numel() + nodes.numel() / 4, kDim}, Device::Cuda(0), &Runtime());
      if (!grown.ok()) Die("allocate", grown.status());
      features = std::move(grown).value();
    }
    Result<Tensor> out = features.Prefix(nodes.numel());
    if (!out.ok()) Die("features", out.status());
    Status gathered = IndexSelectInto(table, nodes, *out, &scratch);  // the rows are in place when it returns
    if (!gathered.ok()) Die("gather", gathered);
    if (i >= warm_up) {
      for (const DeviceSampledLayer& layer : *layers) edges += layer.indices.numel();
      rows += nodes.numel();
    }
    ++i;
  }
  const int64_t timed = i - warm_up;
  state.SetLabel(std::string(weighted ? "weighted" : "uniform") +
                 ", graph and features in device memory, nothing read back");
  if (counts.has_value() && timed > 0) {
    counts->Report(state, timed);
    state.counters["feature_rows_per_minibatch"] = static_cast<double>(rows) / static_cast<double>(timed);
  }
  state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DeviceMiniBatch)
    ->ArgNames({"weighted"})
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2.0);

// Copies BM_Gather's byte count from `table` (at one of four offsets, so
// the source is not the same cache lines each time) into `out`, and waits.
void CopyGatherBytes(const Tensor& table, Tensor& out, int64_t iteration) {
  const size_t offset = static_cast<size_t>(iteration % 4) * kGatherBytes;
  Status copied = Runtime().Memcpy(out.raw_data(), static_cast<const char*>(table.raw_data()) + offset, kGatherBytes,
                                   MemcpyKind::kDeviceToDevice);
  if (!copied.ok()) Die("copy", copied);
  Status synced = Runtime().DeviceSynchronize();
  if (!synced.ok()) Die("synchronize", synced);
}

// The same bytes as BM_Gather, copied contiguously from device memory into a
// fresh device buffer (the gather also allocates its result).
void BM_DeviceCopySameBytes(benchmark::State& state) {
  Tensor table = FeatureTable(/*pinned=*/false);
  for (auto _ : state) {
    Tensor out = DeviceBuffer();
    CopyGatherBytes(table, out, state.iterations());
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetLabel("cudaMemcpy device to device");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kGatherBytes));
}
BENCHMARK(BM_DeviceCopySameBytes)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same copy into one buffer allocated before timing: the device's copy
// bandwidth without cudaMalloc/cudaFree per iteration (the physical limit the
// two above are read against; they allocate their results).
void BM_DeviceCopyPreallocated(benchmark::State& state) {
  Tensor table = FeatureTable(/*pinned=*/false);
  Tensor out = DeviceBuffer();
  for (auto _ : state) CopyGatherBytes(table, out, state.iterations());
  state.SetLabel("cudaMemcpy device to device, output allocated once");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(kGatherBytes));
}
BENCHMARK(BM_DeviceCopyPreallocated)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace faultline

int main(int argc, char** argv) { return faultline::RunBenchmarksMain(argc, argv, "device_bench"); }
