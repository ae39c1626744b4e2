// Checks device sampling against the CPU reference, bit for bit, for both
// graph placements; runs on simcuda, and on cuda in the gpu-tagged target.
#include "reference/sampling/device_sampling.h"

#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <random>
#include <string>

#include "kernels/sampling_core.h"
#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"
#include "reference/runtime/test_runtime.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

struct Mode {
  const char* name;
  int64_t fanout;
  bool replace;
  bool weighted;
};

void ExpectSameLayers(const std::vector<SampledLayer>& dev, const std::vector<SampledLayer>& cpu) {
  ASSERT_EQ(cpu.size(), dev.size());
  for (size_t k = 0; k < cpu.size(); ++k) {
    const SampledLayer &d = dev[k], &h = cpu[k];
    EXPECT_EQ(d.subgraph.seeds, h.subgraph.seeds) << "layer " << k;
    EXPECT_EQ(d.subgraph.indptr, h.subgraph.indptr) << "layer " << k;
    EXPECT_EQ(d.subgraph.indices, h.subgraph.indices) << "layer " << k;
    EXPECT_EQ(d.subgraph.original_edge_ids, h.subgraph.original_edge_ids) << "layer " << k;
    EXPECT_EQ(d.unique_nodes, h.unique_nodes) << "layer " << k;
    EXPECT_EQ(d.compacted_indices, h.compacted_indices) << "layer " << k;
  }
}

// Every `step`-th of the test graph's 2000 nodes, in a scrambled order.
std::vector<int64_t> SpreadSeeds(int64_t step) {
  std::vector<int64_t> seeds;
  for (int64_t s = 0; s < 2000; s += step) seeds.push_back((s * 7919) % 2000);
  return seeds;
}

class DeviceSamplingTest : public testing::TestWithParam<GraphPlacement> {
 protected:
  void SetUp() override {
    auto rt = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(rt);
    rt_ = *rt;
    auto graph = GeneratePowerLaw(2000, 30000, 7, /*weighted=*/true);
    FL_ASSERT_OK(graph);
    graph_storage_ = std::move(graph).value();
  }
  DeviceRuntime* rt_ = nullptr;
  std::optional<CscGraph> graph_storage_;
  const CscGraph& graph() const { return *graph_storage_; }
};

TEST_P(DeviceSamplingTest, MatchesTheCpuReferenceBitForBit) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  const std::vector<int64_t> seeds = SpreadSeeds(3);
  const Mode modes[] = {{"uniform", 5, false, false},
                        {"weighted", 5, false, true},
                        {"uniform-replace", 4, true, false},
                        {"weighted-replace", 4, true, true},
                        {"all", -1, false, false},
                        {"all-weighted", -1, false, true},
                        {"zero", 0, false, false}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    auto cpu = SampleNeighbors(graph(), seeds, m.fanout, 1, SamplingOptions{m.replace, m.weighted, 42, 2});
    auto dev = SampleNeighborsOnDevice(*device_graph, seeds, m.fanout, 1, SamplingOptions{m.replace, m.weighted, 42});
    FL_ASSERT_OK(cpu);
    FL_ASSERT_OK(dev);
    EXPECT_EQ(dev->seeds, cpu->seeds);
    EXPECT_EQ(dev->indptr, cpu->indptr);
    EXPECT_EQ(dev->indices, cpu->indices);
    EXPECT_EQ(dev->original_edge_ids, cpu->original_edge_ids);
  }
}

// Every array of every hop, for hops with edges, a hop with none (fanout
// 0: the next hop starts from its seeds alone) and no seeds at all.
TEST_P(DeviceSamplingTest, MultiLayerMatchesTheCpuReference) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  struct Case {
    std::vector<int64_t> seeds, fanouts;
  };
  for (const Case& c : {Case{{0, 5, 17, 5, 1999}, {10, 5, 3}}, Case{{3, 8, 3}, {4, 0, 2}}, Case{{}, {3, 2}}}) {
    SCOPED_TRACE(::testing::PrintToString(c.seeds) + " fanouts " + ::testing::PrintToString(c.fanouts));
    auto cpu = SampleMultiLayer(graph(), c.seeds, c.fanouts, SamplingOptions{false, false, 9, 1});
    auto dev = SampleMultiLayerOnDevice(*device_graph, c.seeds, c.fanouts, SamplingOptions{false, false, 9});
    FL_ASSERT_OK(cpu);
    FL_ASSERT_OK(dev);
    ExpectSameLayers(*dev, *cpu);
  }
}

// A workspace kept from call to call: the same call again makes no device
// allocation, and calls of other sizes and modes in between still match the
// CPU reference, whatever earlier calls left in its buffers. Only the top-k
// modes (here: weighted) use the key buffer.
TEST_P(DeviceSamplingTest, AWarmWorkspaceAllocatesNothingAndEveryResultStaysExact) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  const std::vector<int64_t> many = SpreadSeeds(2);
  const std::vector<int64_t> few = {5, 17, 5};
  struct Call {
    const std::vector<int64_t>& seeds;
    std::vector<int64_t> fanouts;
    bool weighted;
  };
  const Call calls[] = {{many, {10, 5, 3}, false},
                        {few, {4, 0, 2}, false},
                        {many, {6, 4}, true},
                        {few, {3}, true},
                        {many, {10, 5, 3}, false}};
  DeviceSamplingWorkspace ws;
  int64_t after_uniform = 0, warm = 0;
  for (size_t i = 0; i < std::size(calls); ++i) {
    const Call& c = calls[i];
    SCOPED_TRACE("call " + std::to_string(i));
    const SamplingOptions options{false, c.weighted, 11 + i};
    auto cpu = SampleMultiLayer(graph(), c.seeds, c.fanouts, options);
    auto dev = SampleMultiLayerOnDevice(*device_graph, c.seeds, c.fanouts, options, nullptr, &ws);
    FL_ASSERT_OK(cpu);
    FL_ASSERT_OK(dev);
    ExpectSameLayers(*dev, *cpu);
    if (i == 1) after_uniform = ws.allocations();
    if (i == 2) warm = ws.allocations();
  }
  EXPECT_GT(after_uniform, 0);
  // Uniform sampling by Floyd's algorithm keeps no keys: the first weighted
  // call (2) allocates the key buffer, although its hops are smaller than
  // call 0's.
  EXPECT_GT(warm, after_uniform);
  // No later call needed a buffer larger than calls 0-2's and a quarter more.
  EXPECT_EQ(ws.allocations(), warm);
  // Call 0 exactly, after the others: no allocation, in the workspace or
  // anywhere else (no cudaMalloc or cudaFree at all: each would make a GPU
  // synchronize every stream), and the same layers.
  const int64_t before_repeat = ws.allocations();
  const uint64_t alloc_calls = rt_->device_alloc_calls();
  const SamplingOptions first{false, false, 11};
  auto again = SampleMultiLayerOnDevice(*device_graph, many, {10, 5, 3}, first, nullptr, &ws);
  EXPECT_EQ(rt_->device_alloc_calls(), alloc_calls);
  auto cpu = SampleMultiLayer(graph(), many, {10, 5, 3}, first);
  FL_ASSERT_OK(again);
  FL_ASSERT_OK(cpu);
  ExpectSameLayers(*again, *cpu);
  EXPECT_EQ(ws.allocations(), before_repeat);
  EXPECT_GT(ws.bytes(), 0u);
}

// On a caller's stream, in a warm workspace: the same layers as without one.
// (Both runtimes' streams synchronize with the default stream, so this
// checks the wiring, not the wait before each read of the host.)
TEST_P(DeviceSamplingTest, MultiLayerOnAStreamMatchesTheCpuReference) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  auto stream = rt_->StreamCreate();
  FL_ASSERT_OK(stream);
  const std::vector<int64_t> seeds = {0, 5, 17, 5, 1999};
  DeviceSamplingWorkspace ws;
  for (uint64_t rng_seed : {3u, 4u}) {
    const SamplingOptions options{false, true, rng_seed};
    auto dev = SampleMultiLayerOnDevice(*device_graph, seeds, {8, 4}, options, *stream, &ws);
    auto cpu = SampleMultiLayer(graph(), seeds, {8, 4}, options);
    FL_ASSERT_OK(dev);
    FL_ASSERT_OK(cpu);
    ExpectSameLayers(*dev, *cpu);
  }
  FL_EXPECT_OK(rt_->StreamDestroy(*stream));
}

// The host waits for the device (a round trip on a GPU) only where a hop's
// bound does not fit the workspace's bounded_hop_words: such a hop waits
// once, for its totals and every count not read yet. One wait then reads
// the counts left, and one more every hop's arrays; the seeds' upload,
// from pinned memory, adds none. From 667 seeds of the 2000-node graph,
// fanouts [15, 10, 5] bound the hops' seeds and picks at 10,672 words (667
// + 667 * 15), 22,000 (2000 + 2000 * 10: the seeds are at most the graph's
// nodes) and 12,000. So a workspace of 2^21 waits for no hop, one of 0 for
// each, and one of 15,000 (uniform) for the second hop alone. On the
// default stream and on a stream of its own, uniform and weighted, in warm
// workspaces, with the CPU's layers; uniform, nine launches a hop.
TEST_P(DeviceSamplingTest, AMinibatchWaitsForTheDeviceOnlyForHopsLargerThanTheirBound) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  auto stream = rt_->StreamCreate();
  FL_ASSERT_OK(stream);
  const std::vector<int64_t> seeds = SpreadSeeds(3);
  ASSERT_EQ(seeds.size(), 667u);
  const std::vector<int64_t> fanouts = {15, 10, 5};
  struct Bounded {
    int64_t hop_words;
    uint64_t uniform_waits;
  };
  for (const Bounded& b :
       {Bounded{DeviceSamplingWorkspace::kDefaultBoundedHopWords, 2}, Bounded{0, 5}, Bounded{15000, 3}}) {
    DeviceSamplingWorkspace ws(DeviceSamplingWorkspace::Growth::kQuarterMore, b.hop_words);
    for (StreamHandle on : {StreamHandle{nullptr}, *stream}) {
      for (bool weighted : {false, true}) {
        SCOPED_TRACE(std::string(weighted ? "weighted" : "uniform") + (on ? ", own stream" : ", default stream") +
                     ", bounded hop words " + std::to_string(b.hop_words));
        const SamplingOptions options{false, weighted, 5};
        const uint64_t before = rt_->host_waits(), launches_before = rt_->launches();
        auto dev = SampleMultiLayerOnDevice(*device_graph, seeds, fanouts, options, on, &ws);
        const uint64_t waits = rt_->host_waits() - before, launches = rt_->launches() - launches_before;
        FL_ASSERT_OK(dev);
        auto cpu = SampleMultiLayer(graph(), seeds, fanouts, options);
        FL_ASSERT_OK(cpu);
        ExpectSameLayers(*dev, *cpu);
        // Weighted hops also bound their chunk survivors, which the
        // middle workspace's count does not follow.
        if (!weighted || b.hop_words != 15000) EXPECT_EQ(waits, b.uniform_waits);
        // A uniform hop launches nine kernels: the counts and their sum, the
        // picks, then the table's clear, insert, mark, the ranks' sum, emit
        // and relabel (no one-word fills: the kernels zero their sums' last
        // words).
        if (!weighted) EXPECT_EQ(launches, 9 * fanouts.size());
      }
    }
  }
  FL_EXPECT_OK(rt_->StreamDestroy(*stream));
}

// A first hop's bound counts a repeated seed once more, not every edge of
// the graph once more: from all 2000 nodes of the test graph and node 0
// again, a hop of fanout 100 picks at most every edge (30,000) and 100 more,
// so with the 2001 seed words it fits 33,101 words and is queued without a
// wait (two waits: the counts, then the arrays). Bounded by the most often
// any node is a seed (twice), it would not fit and would wait once more.
TEST_P(DeviceSamplingTest, ARepeatedSeedLoosensTheFirstHopsBoundByOneSeed) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  ASSERT_EQ(device_graph->num_edges(), 30000);
  ASSERT_GE(device_graph->max_degree(), 100);  // so that the repeat adds 100
  std::vector<int64_t> seeds(2000);
  for (int64_t v = 0; v < 2000; ++v) seeds[v] = v;
  seeds.push_back(0);
  DeviceSamplingWorkspace ws(DeviceSamplingWorkspace::Growth::kQuarterMore, 2001 + 30000 + 100);
  const SamplingOptions options{false, false, 9};
  const uint64_t before = rt_->host_waits();
  auto dev = SampleMultiLayerOnDevice(*device_graph, seeds, {100}, options, nullptr, &ws);
  const uint64_t waits = rt_->host_waits() - before;
  FL_ASSERT_OK(dev);
  auto cpu = SampleMultiLayer(graph(), seeds, {100}, options);
  FL_ASSERT_OK(cpu);
  ExpectSameLayers(*dev, *cpu);
  EXPECT_EQ(waits, 2u);
}

// A device tensor of int64 read back to the host.
std::vector<int64_t> OnHost(const Tensor& on_device) {
  EXPECT_FALSE(on_device.device().is_cpu());
  Result<Tensor> host = on_device.Cpu();
  FL_EXPECT_OK(host);
  Result<std::vector<int64_t>> values = host.ok() ? host->ToVector<int64_t>() : host.status();
  FL_EXPECT_OK(values);
  return values.ok() ? *values : std::vector<int64_t>{};
}

// Layers left on the device hold the CPU's arrays, each layer's unique
// nodes are the next layer's seeds in place, and only the counts that size
// them came back: at most three words a hop and one more, at one wait when
// every hop fits its bound, and one wait a hop and one more when none may.
// Uniform and weighted, on the default stream and on a stream of its own,
// with a hop of no picks, in warm workspaces.
TEST_P(DeviceSamplingTest, LayersKeptOnTheDeviceHoldTheCpuArraysAndOnlyTheirCountsComeBack) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  auto stream = rt_->StreamCreate();
  FL_ASSERT_OK(stream);
  const std::vector<int64_t> seeds = SpreadSeeds(3);
  DeviceSamplingWorkspace ws;
  DeviceSamplingWorkspace waiting_ws(DeviceSamplingWorkspace::Growth::kQuarterMore, /*bounded_hop_words=*/0);
  for (const std::vector<int64_t>& fanouts : {std::vector<int64_t>{15, 10, 5}, std::vector<int64_t>{4, 0, 2}}) {
    for (StreamHandle on : {StreamHandle{nullptr}, *stream}) {
      for (bool weighted : {false, true}) {
        for (DeviceSamplingWorkspace* in : {&ws, &waiting_ws}) {
          SCOPED_TRACE(::testing::PrintToString(fanouts) + (weighted ? " weighted" : " uniform") +
                       (on ? ", own stream" : ", default stream") + (in == &ws ? ", bounded" : ", waiting"));
          const SamplingOptions options{false, weighted, 8};
          const uint64_t waits_before = rt_->host_waits(), bytes_before = rt_->bytes_to_host();
          auto kept = SampleMultiLayerKeptOnDevice(*device_graph, seeds, fanouts, options, on, *in);
          const uint64_t waits = rt_->host_waits() - waits_before, bytes = rt_->bytes_to_host() - bytes_before;
          FL_ASSERT_OK(kept);
          EXPECT_EQ(waits, in == &ws ? 1 : fanouts.size() + 1);
          EXPECT_LE(bytes, (3 * fanouts.size() + 1) * sizeof(int64_t));
          auto cpu = SampleMultiLayer(graph(), seeds, fanouts, options);
          FL_ASSERT_OK(cpu);
          ASSERT_EQ(kept->size(), cpu->size());
          for (size_t k = 0; k < cpu->size(); ++k) {
            SCOPED_TRACE("layer " + std::to_string(k));
            const DeviceSampledLayer& d = (*kept)[k];
            const SampledLayer& h = (*cpu)[k];
            EXPECT_EQ(OnHost(d.seeds), h.subgraph.seeds);
            EXPECT_EQ(OnHost(d.indptr), h.subgraph.indptr);
            EXPECT_EQ(OnHost(d.original_edge_ids), h.subgraph.original_edge_ids);
            EXPECT_EQ(OnHost(d.indices), h.subgraph.indices);
            EXPECT_EQ(OnHost(d.compacted_indices), h.compacted_indices);
            EXPECT_EQ(OnHost(d.unique_nodes), h.unique_nodes);
            EXPECT_EQ(d.unique_nodes.device(), Device::Cuda(0));
            EXPECT_EQ(d.unique_nodes.runtime(), rt_);
            if (k + 1 < cpu->size()) {
              EXPECT_EQ((*kept)[k + 1].seeds.raw_data(), d.unique_nodes.raw_data());
              EXPECT_EQ((*kept)[k + 1].seeds.numel(), d.unique_nodes.numel());
            }
          }
          // Read back afterwards: the CPU's layers, for one more wait.
          const uint64_t before_read = rt_->host_waits();
          auto read = ReadLayersBack(*kept, seeds, on, *in);
          FL_ASSERT_OK(read);
          EXPECT_EQ(rt_->host_waits() - before_read, 1u);
          ExpectSameLayers(*read, *cpu);
        }
      }
    }
  }
  // No seeds: every array empty, and the device untouched.
  const uint64_t waits_before = rt_->host_waits();
  auto none = SampleMultiLayerKeptOnDevice(*device_graph, {}, {3, 2}, SamplingOptions{false, false, 1}, nullptr, ws);
  FL_ASSERT_OK(none);
  ASSERT_EQ(none->size(), 2u);
  for (const DeviceSampledLayer& layer : *none) {
    EXPECT_EQ(layer.indptr.numel() + layer.original_edge_ids.numel() + layer.unique_nodes.numel(), 0);
    EXPECT_EQ(layer.indptr.device(), Device::Cuda(0));
  }
  EXPECT_EQ(rt_->host_waits(), waits_before);
  auto empty_read = ReadLayersBack(*none, {}, nullptr, ws);
  FL_ASSERT_OK(empty_read);
  ExpectSameLayers(*empty_read, *SampleMultiLayer(graph(), {}, {3, 2}, SamplingOptions{false, false, 1}));
  // Layers read back with seeds they were not sampled from are refused.
  auto mismatched = ReadLayersBack(*none, {1, 2}, nullptr, ws);
  EXPECT_EQ(mismatched.status().message(),
            "ReadLayersBack: 2 kept layers, the first with 0 seeds, and 2 seeds given; expected the layers "
            "SampleMultiLayerKeptOnDevice sampled from them");
  EXPECT_EQ(rt_->host_waits(), waits_before);
  // A bad request is refused as SampleMultiLayerOnDevice refuses it.
  auto bad =
      SampleMultiLayerKeptOnDevice(*device_graph, {1, 2000}, {3, 2}, SamplingOptions{false, false, 1}, nullptr, ws);
  auto bad_host = SampleMultiLayerOnDevice(*device_graph, {1, 2000}, {3, 2}, SamplingOptions{false, false, 1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().ToString(), bad_host.status().ToString());
  FL_EXPECT_OK(rt_->StreamDestroy(*stream));
}

// The multi-hop loop checks every hop's request as a single hop does, names
// the hop, and leaves no sticky error behind.
TEST_P(DeviceSamplingTest, MultiLayerBadArgumentsNameTheLayer) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  auto out_of_range = SampleMultiLayerOnDevice(*device_graph, {1, 2000}, {3, 2}, SamplingOptions{false, false, 1});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().message(), "layer 0: seeds[1]=2000 is out of range [0, 2000)");
  auto bad_fanout = SampleMultiLayerOnDevice(*device_graph, {1}, {3, -2}, SamplingOptions{false, false, 1});
  ASSERT_FALSE(bad_fanout.ok());
  EXPECT_EQ(bad_fanout.status().message(), "layer 1: fanout=-2; expected -1 (all neighbours) or 0..2147483647");
  auto no_fanouts = SampleMultiLayerOnDevice(*device_graph, {1}, {}, SamplingOptions{false, false, 1});
  EXPECT_EQ(no_fanouts.status().message(), "fanouts is empty; expected one fanout per layer");
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

TEST_P(DeviceSamplingTest, BadArgumentsAreNamedAndNothingIsLaunched) {
  auto device_graph = DeviceGraph::Create(graph(), *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  auto out_of_range = SampleNeighborsOnDevice(*device_graph, {1, 2000}, 3, 0, SamplingOptions{false, false, 1});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_EQ(out_of_range.status().message(), "seeds[1]=2000 is out of range [0, 2000)");
  auto bad_fanout = SampleNeighborsOnDevice(*device_graph, {1}, -2, 0, SamplingOptions{false, false, 1});
  EXPECT_EQ(bad_fanout.status().message(), "fanout=-2; expected -1 (all neighbours) or 0..2147483647");
  auto huge_fanout = SampleNeighborsOnDevice(*device_graph, {1}, int64_t{1} << 31, 0, SamplingOptions{false, false, 1});
  EXPECT_EQ(huge_fanout.status().code(), StatusCode::kInvalidArgument);
  // num_threads is not used on a device, but refused as on the CPU: the
  // same rejections on every backend.
  for (int threads : {0, -1, 1025, 100000}) {
    const SamplingOptions options{false, false, 1, threads};
    const std::string expected = "num_threads=" + std::to_string(threads) + "; expected 1..1024";
    auto one_hop = SampleNeighborsOnDevice(*device_graph, {1}, 3, 0, options);
    EXPECT_EQ(one_hop.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(one_hop.status().message(), expected);
    EXPECT_EQ(SampleNeighbors(graph(), {1}, 3, 0, options).status().message(), expected);
    auto hops = SampleMultiLayerOnDevice(*device_graph, {1}, {3, 2}, options);
    EXPECT_EQ(hops.status().message(), "layer 0: " + expected);
    EXPECT_EQ(SampleMultiLayer(graph(), {1}, {3, 2}, options).status().message(), "layer 0: " + expected);
  }
  FL_EXPECT_OK(SampleNeighborsOnDevice(*device_graph, {1}, 3, 0, SamplingOptions{false, false, 1, 1024}));
  auto unweighted = CscGraph::Create({0, 1, 1}, {1});
  auto unweighted_dev = DeviceGraph::Create(*unweighted, *rt_, GetParam());
  auto no_weights = SampleNeighborsOnDevice(*unweighted_dev, {0}, 1, 0, SamplingOptions{false, true, 1});
  EXPECT_EQ(no_weights.status().message(), "weighted sampling was requested but the graph has no edge weights");
  auto weighted_no_edges = CscGraph::Create({0, 0, 0}, {}, std::vector<float>{});
  FL_ASSERT_OK(weighted_no_edges);
  auto weighted_dev = DeviceGraph::Create(*weighted_no_edges, *rt_, GetParam());
  auto empty = SampleNeighborsOnDevice(*weighted_dev, {0, 1}, 2, 0, SamplingOptions{false, true, 1});
  FL_ASSERT_OK(empty);
  EXPECT_EQ(empty->indptr, (std::vector<int64_t>{0, 0, 0}));
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

// A valid request whose picks cannot fit (2^41 picks, 32 TiB) fails with
// the runtime's out-of-memory error after the same text the CPU reference
// gives (whose own error is Unavailable: no CUDA call failed there).
TEST_P(DeviceSamplingTest, PicksBeyondTheMemoryAreNamedAsOnTheCpu) {
  Result<CscGraph> chain = MakeChain(2);
  FL_ASSERT_OK(chain);
  auto device_graph = DeviceGraph::Create(*chain, *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  const std::vector<int64_t> seeds(1024, 1);
  const SamplingOptions options{/*replace=*/true, false, 1, 1};
  const std::string need =
      "sampling 1024 seeds with fanout 2147483647 needs 2199023254528 picks (35184372072448 bytes)";
  auto one_hop = SampleNeighborsOnDevice(*device_graph, seeds, 2147483647, 0, options);
  ASSERT_FALSE(one_hop.ok());
  EXPECT_EQ(one_hop.status().code(), StatusCode::kDeviceError);
  ASSERT_TRUE(one_hop.status().cuda_error().has_value());
  EXPECT_EQ(one_hop.status().cuda_error()->name, "cudaErrorMemoryAllocation");
  EXPECT_EQ(one_hop.status().message().rfind(need + ": ", 0), 0u) << one_hop.status();
  auto hops = SampleMultiLayerOnDevice(*device_graph, seeds, {2147483647}, options);
  EXPECT_EQ(hops.status().code(), StatusCode::kDeviceError);
  EXPECT_EQ(hops.status().message().rfind("layer 0: " + need + ": ", 0), 0u) << hops.status();
  Result<SampledSubgraph> cpu = SampleNeighbors(*chain, seeds, 2147483647, 0, options);
  EXPECT_EQ(cpu.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(cpu.status().message().rfind(need + ", ", 0), 0u) << cpu.status();
  // A failed allocation is not sticky: the device samples as before (and
  // the thread's last error is the allocation's, cleared here).
  EXPECT_EQ(rt_->GetLastError().cuda_error().value_or(CudaErrorInfo{}).name, "cudaErrorMemoryAllocation");
  FL_EXPECT_OK(SampleNeighborsOnDevice(*device_graph, {1}, 2, 0, options));
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

// Hubs whose top-k the device splits into chunks (one thread per chunk,
// then a merge: kernels::sampling::TopKChunks) give the CPU's picks, one
// hop and three: in-degrees of 5000, one chunk and one edge, 3000 with
// three eligible edges, and two chunks exactly, among 3000 small nodes
// whose edges often come from the hubs, so that every hop meets them.
// Hub 1 carries most of its weight in one edge, so that it takes the key
// path (and chunks) where the others take the rejection path (no chunks).
TEST_P(DeviceSamplingTest, HubsSplitIntoChunksGiveTheCpuPicks) {
  const int64_t kChunk = kernels::sampling::kTopKChunkEdges;
  const std::vector<int64_t> hub_degrees = {5000, kChunk + 1, 3000, 2 * kChunk};
  std::mt19937_64 random(5);
  const int64_t num_nodes = 3000;
  std::vector<int64_t> indptr = {0}, indices;
  std::vector<float> weights;
  for (int64_t v = 0; v < num_nodes; ++v) {
    const int64_t degree = v < 4 ? hub_degrees[v] : static_cast<int64_t>(random() % 6);
    for (int64_t j = 0; j < degree; ++j) {
      indices.push_back(random() % 3 == 0 ? static_cast<int64_t>(random() % 4)
                                          : static_cast<int64_t>(random() % num_nodes));
      const bool eligible = v == 2 ? j < 3 : random() % 7 != 0;
      weights.push_back(eligible ? static_cast<float>((random() >> 40) + 1) : 0.0f);
    }
    if (v == 1) weights[indptr.back()] = 1e12f;  // hub 1's weight in one edge: the key path at small fanouts
    indptr.push_back(static_cast<int64_t>(indices.size()));
  }
  auto graph = CscGraph::Create(indptr, indices, weights);
  FL_ASSERT_OK(graph);
  auto device_graph = DeviceGraph::Create(*graph, *rt_, GetParam());
  FL_ASSERT_OK(device_graph);
  const std::vector<int64_t> seeds = {0, 1, 2, 3, 17, 2999, 0};
  const Mode modes[] = {{"weighted 5", 5, false, true},
                        {"weighted 300", 300, false, true},
                        {"weighted 1", 1, false, true},
                        {"uniform top-k 300", 300, false, false},
                        {"uniform top-k 1000", 1000, false, false}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    const SamplingOptions options{m.replace, m.weighted, 31};
    auto cpu = SampleNeighbors(*graph, seeds, m.fanout, 2, SamplingOptions{m.replace, m.weighted, 31, 2});
    auto dev = SampleNeighborsOnDevice(*device_graph, seeds, m.fanout, 2, options);
    FL_ASSERT_OK(cpu);
    FL_ASSERT_OK(dev);
    EXPECT_EQ(dev->indptr, cpu->indptr);
    EXPECT_EQ(dev->original_edge_ids, cpu->original_edge_ids);
    EXPECT_EQ(dev->indices, cpu->indices);
    auto cpu_hops =
        SampleMultiLayer(*graph, seeds, {m.fanout, m.fanout, m.fanout}, SamplingOptions{m.replace, m.weighted, 31, 2});
    auto dev_hops = SampleMultiLayerOnDevice(*device_graph, seeds, {m.fanout, m.fanout, m.fanout}, options);
    FL_ASSERT_OK(cpu_hops);
    FL_ASSERT_OK(dev_hops);
    ExpectSameLayers(*dev_hops, *cpu_hops);
  }
  // The device took the chunked path for hub 1 only at weighted fanout 5,
  // in chunks of 1024 (2 of them, fanout survivors each): hubs 0 and 3 are
  // sampled by rejection, hub 2 has 3 eligible edges (no top-k), the small
  // nodes one chunk at most. (A workspace that waits for every hop's counts
  // sizes the buffers by them, not by a bound.)
  using W = DeviceSamplingWorkspace;
  W ws(W::Growth::kExact, /*bounded_hop_words=*/0);
  auto hop =
      SampleMultiLayerOnDevice(*device_graph, {0, 1, 2, 3, 17}, {5}, SamplingOptions{false, true, 31}, nullptr, &ws);
  FL_ASSERT_OK(hop);
  EXPECT_EQ(ws.words(W::kChunkSurvivors), 2 * 5);
  EXPECT_EQ(ws.words(W::kChunkKeys), 2 * 2 * 5);
  W uniform(W::Growth::kExact);  // Floyd's draws: no chunks, no keys
  FL_ASSERT_OK(SampleMultiLayerOnDevice(*device_graph, {0, 1, 2, 3, 17}, {5}, SamplingOptions{false, false, 31},
                                        nullptr, &uniform));
  EXPECT_EQ(uniform.words(W::kChunkSurvivors), 0);
  EXPECT_EQ(uniform.words(W::kChunkOffsets), 0);
}

INSTANTIATE_TEST_SUITE_P(Placements, DeviceSamplingTest,
                         testing::Values(GraphPlacement::kDevice, GraphPlacement::kPinnedHost),
                         [](const auto& info) { return info.param == GraphPlacement::kDevice ? "device" : "pinned"; });

TEST(UniqueAndCompactOnDeviceTest, MatchesTheHostOrderWithDuplicatesEverywhere) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime* rt = *runtime;
  std::vector<int64_t> seeds = {7, 3, 7, 1000000007};
  std::vector<int64_t> indices;
  for (int64_t i = 0; i < 5000; ++i) indices.push_back((i * 7919 + 13) % 1700 + (i % 3 == 0 ? 1000000000 : 0));
  indices.push_back(3);
  const UniqueAndCompactResult host = *UniqueAndCompact(seeds, indices);
  auto dev = UniqueAndCompactOnDevice(*rt, 0, seeds, indices);
  FL_ASSERT_OK(dev);
  EXPECT_EQ(dev->unique_nodes, host.unique_nodes);
  EXPECT_EQ(dev->compacted_indices, host.compacted_indices);
  auto empty = UniqueAndCompactOnDevice(*rt, 0, {}, {});
  FL_ASSERT_OK(empty);
  EXPECT_TRUE(empty->unique_nodes.empty());
}

// Negative ids are refused on the device as on the host: the same code and
// message, naming the first one (seeds before indices).
TEST(UniqueAndCompactOnDeviceTest, RefusesNegativeIdsAsTheHostDoes) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime* rt = *runtime;
  struct Case {
    std::vector<int64_t> seeds, indices;
    const char* message;
  };
  const Case cases[] = {
      {{-5}, {}, "seeds[0]=-5 is negative; expected node ids >= 0"},
      {{1}, {2, -4}, "indices[1]=-4 is negative; expected node ids >= 0"},
      {{2, -1}, {-3}, "seeds[1]=-1 is negative; expected node ids >= 0"},
  };
  for (const Case& c : cases) {
    auto dev = UniqueAndCompactOnDevice(*rt, 0, c.seeds, c.indices);
    ASSERT_FALSE(dev.ok());
    EXPECT_EQ(dev.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(dev.status().message(), c.message);
    auto host = UniqueAndCompact(c.seeds, c.indices);
    ASSERT_FALSE(host.ok());
    EXPECT_EQ(host.status().code(), dev.status().code());
    EXPECT_EQ(host.status().message(), dev.status().message());
  }
  FL_EXPECT_OK(rt->PeekAtLastError());
}

// The device hash table under contention: millions of positions, most of
// them repeats, one node in a quarter of them, and the seeds again among
// the indices. On a GPU thousands of threads race on the same slots
// (atomicCAS, then atomicMin for the first position), which neither
// simcuda's one-thread-at-a-time twin nor compute-sanitizer's racecheck
// (shared memory only) exercises; the order must still be the host's, every
// time. simcuda runs a smaller case (its twin is sequential and slow).
TEST(UniqueAndCompactOnDeviceTest, ManyThreadsRacingForOneSlotKeepTheHostOrder) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime* rt = *runtime;
  const bool gpu = std::string(rt->name()) == "cuda";
  const int64_t positions = gpu ? 4'000'000 : 200'000;
  const int rounds = gpu ? 20 : 2;
  std::vector<int64_t> seeds;
  for (int64_t i = 0; i < 1024; ++i) seeds.push_back(i * 977 % 50'000);
  std::vector<int64_t> indices(positions);
  for (int64_t i = 0; i < positions; ++i) {
    indices[i] = i % 4 == 0 ? 42 : (i * 7919 + 13) % 50'000;  // node 42 in a quarter of the positions
  }
  const UniqueAndCompactResult host = *UniqueAndCompact(seeds, indices);
  for (int round = 0; round < rounds; ++round) {
    auto dev = UniqueAndCompactOnDevice(*rt, 0, seeds, indices);
    FL_ASSERT_OK(dev);
    ASSERT_EQ(dev->unique_nodes, host.unique_nodes) << "round " << round;
    ASSERT_EQ(dev->compacted_indices, host.compacted_indices) << "round " << round;
  }
}

// A buffer grows to a quarter more than asked and is reused below that;
// buffers stay on one device of one runtime.
TEST(DeviceSamplingWorkspaceTest, GrowsByAQuarterAndStaysOnItsDevice) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  using W = DeviceSamplingWorkspace;
  W ws;
  auto none = ws.Words(W::kRank, 0, rt, Device::Cuda(0));
  FL_ASSERT_OK(none);
  EXPECT_EQ(none->size, 0);
  EXPECT_EQ(ws.allocations(), 0);
  auto first = ws.Words(W::kRank, 8, rt, Device::Cuda(0));
  FL_ASSERT_OK(first);
  EXPECT_EQ(first->size, 8);
  EXPECT_EQ(ws.bytes(), 10 * sizeof(int64_t));  // 8 and a quarter more
  auto within = ws.Words(W::kRank, 10, rt, Device::Cuda(0));
  FL_ASSERT_OK(within);
  EXPECT_EQ(within->data, first->data);
  EXPECT_EQ(ws.allocations(), 1);
  auto grown = ws.Words(W::kRank, 11, rt, Device::Cuda(0));
  FL_ASSERT_OK(grown);
  EXPECT_EQ(ws.allocations(), 2);
  EXPECT_EQ(ws.bytes(), 13 * sizeof(int64_t));
  const std::string held_on_0 =
      std::string("DeviceSamplingWorkspace: holds buffers on cuda:0 of ") + rt.name() + "; asked for cuda:1 of ";
  auto elsewhere = ws.Words(W::kSampleKeys, 4, rt, Device::Cuda(1));
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.status().message(), held_on_0 + rt.name());
  const std::string below = "; expected a buffer below " + std::to_string(W::kNumBuffers) + " and a size in [0, 2^58]";
  auto negative = ws.Words(W::kSampleKeys, -1, rt, Device::Cuda(0));
  EXPECT_EQ(negative.status().message(), "DeviceSamplingWorkspace::Words: buffer 0, size -1" + below);
  auto huge = ws.Words(W::kSampleKeys, W::kMaxWords + 1, rt, Device::Cuda(0));
  EXPECT_EQ(huge.status().message(),
            "DeviceSamplingWorkspace::Words: buffer 0, size " + std::to_string(W::kMaxWords + 1) + below);
  auto no_such = ws.Words(W::kNumBuffers, 1, rt, Device::Cuda(0));
  EXPECT_EQ(no_such.status().message(),
            "DeviceSamplingWorkspace::Words: buffer " + std::to_string(W::kNumBuffers) + ", size 1" + below);
  EXPECT_EQ(ws.allocations(), 2);
  // The hash tables, whose sizes are powers of two, are exact.
  auto table = ws.Words(W::kTableSlots, 16, rt, Device::Cuda(0));
  FL_ASSERT_OK(table);
  EXPECT_EQ(ws.bytes(), (13 + 16) * sizeof(int64_t));
}

// Each layer has arrays of its own, which grow as the scratch does and stay
// on the same device as every other buffer.
TEST(DeviceSamplingWorkspaceTest, EachLayerKeepsItsOwnArrays) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  DeviceRuntime& rt = **runtime;
  using W = DeviceSamplingWorkspace;
  W ws;
  auto layer0 = ws.LayerWords(0, W::kEdges, 8, rt, Device::Cuda(0));
  auto layer2 = ws.LayerWords(2, W::kEdges, 8, rt, Device::Cuda(0));
  FL_ASSERT_OK(layer0);
  FL_ASSERT_OK(layer2);
  EXPECT_NE(layer0->data, layer2->data);
  EXPECT_EQ(ws.allocations(), 2);
  EXPECT_EQ(ws.bytes(), 2 * 10 * sizeof(int64_t));  // 8 and a quarter more, twice
  auto again = ws.LayerWords(0, W::kEdges, 10, rt, Device::Cuda(0));
  FL_ASSERT_OK(again);
  EXPECT_EQ(again->data, layer0->data);
  EXPECT_EQ(ws.allocations(), 2);
  auto elsewhere = ws.LayerWords(1, W::kSeeds, 4, rt, Device::Cuda(1));
  EXPECT_EQ(elsewhere.status().message(), std::string("DeviceSamplingWorkspace: holds buffers on cuda:0 of ") +
                                              rt.name() + "; asked for cuda:1 of " + rt.name());
  auto scratch_elsewhere = ws.Words(W::kRank, 4, rt, Device::Cuda(1));
  EXPECT_EQ(scratch_elsewhere.status().message(), elsewhere.status().message());
  const std::string expected = "; expected a layer below " + std::to_string(W::kMaxLayers) + ", an array below " +
                               std::to_string(W::kNumLayerArrays) + " and a size in [0, 2^58]";
  EXPECT_EQ(ws.LayerWords(-1, W::kSeeds, 1, rt, Device::Cuda(0)).status().message(),
            "DeviceSamplingWorkspace::LayerWords: layer -1, array 0, size 1" + expected);
  EXPECT_EQ(
      ws.LayerWords(W::kMaxLayers, W::kSeeds, 1, rt, Device::Cuda(0)).status().message(),
      "DeviceSamplingWorkspace::LayerWords: layer " + std::to_string(W::kMaxLayers) + ", array 0, size 1" + expected);
  EXPECT_EQ(ws.LayerWords(0, W::kNumLayerArrays, 1, rt, Device::Cuda(0)).status().message(),
            "DeviceSamplingWorkspace::LayerWords: layer 0, array " + std::to_string(W::kNumLayerArrays) + ", size 1" +
                expected);
  EXPECT_EQ(ws.LayerWords(0, W::kIndptr, -1, rt, Device::Cuda(0)).status().message(),
            "DeviceSamplingWorkspace::LayerWords: layer 0, array 1, size -1" + expected);
  EXPECT_EQ(ws.allocations(), 2);
  // As tensors: a prefix of the array, or an empty one where none is held.
  auto as_tensor = ws.LayerTensor(0, W::kEdges, 7, rt, Device::Cuda(0));
  FL_ASSERT_OK(as_tensor);
  EXPECT_EQ(as_tensor->raw_data(), layer0->data);
  EXPECT_EQ(as_tensor->shape(), std::vector<int64_t>{7});
  EXPECT_EQ(as_tensor->dtype(), DType::kInt64);
  EXPECT_EQ(as_tensor->device(), Device::Cuda(0));
  auto never_held = ws.LayerTensor(5, W::kSeeds, 0, rt, Device::Cuda(0));
  FL_ASSERT_OK(never_held);
  EXPECT_EQ(never_held->numel(), 0);
  EXPECT_EQ(never_held->device(), Device::Cuda(0));
  EXPECT_EQ(ws.LayerTensor(5, W::kSeeds, 1, rt, Device::Cuda(0)).status().message(),
            "DeviceSamplingWorkspace::LayerTensor: layer 5, array 0, size 1; expected a size in [0, 0] (the words it "
            "holds)");
  EXPECT_EQ(ws.LayerTensor(0, W::kEdges, 11, rt, Device::Cuda(0)).status().message(),
            "DeviceSamplingWorkspace::LayerTensor: layer 0, array 2, size 11; expected a size in [0, 10] (the words "
            "it holds)");
  EXPECT_EQ(ws.allocations(), 2);
}

// A workspace for one call sizes every buffer exactly.
TEST(DeviceSamplingWorkspaceTest, AnExactWorkspaceAllocatesWhatIsAsked) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  using W = DeviceSamplingWorkspace;
  W ws(W::Growth::kExact);
  FL_ASSERT_OK(ws.Words(W::kRank, 8, **runtime, Device::Cuda(0)));
  EXPECT_EQ(ws.bytes(), 8 * sizeof(int64_t));
  FL_ASSERT_OK(ws.Words(W::kRank, 9, **runtime, Device::Cuda(0)));
  EXPECT_EQ(ws.bytes(), 9 * sizeof(int64_t));
  FL_ASSERT_OK(ws.LayerWords(3, W::kIndices, 5, **runtime, Device::Cuda(0)));
  EXPECT_EQ(ws.bytes(), (9 + 5) * sizeof(int64_t));
  EXPECT_EQ(ws.allocations(), 3);
}

TEST(DeviceGraphTest, CpuRuntimeIsRejected) {
  auto graph = CscGraph::Create({0, 1, 1}, {1});
  auto g = DeviceGraph::Create(*graph, GetRuntime(RuntimeKind::kCpu), GraphPlacement::kDevice);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "DeviceGraph::Create: runtime is cpu; expected simcuda or cuda");
}

}  // namespace
}  // namespace faultline
