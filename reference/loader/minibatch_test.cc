// Checks the minibatch encoding: it round-trips, a minibatch streamed in as
// it is sampled (MiniBatchWriter as the sampler's LayerSink, in as many
// chunks as the threads make) decodes to the minibatch sampled whole, a
// segment holds no message until the writer finishes, and corrupt chunks
// or a misused writer are errors that say what is wrong.
#include "reference/loader/minibatch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "reference/graph/generators.h"
#include "reference/loader/shared_memory.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

constexpr int64_t kDim = 3;

// The features of node v: kDim values that name it.
std::vector<float> FeatureRows(const std::vector<int64_t>& nodes) {
  std::vector<float> rows;
  for (int64_t v : nodes) {
    for (int64_t d = 0; d < kDim; ++d) rows.push_back(static_cast<float>(v) + 0.125f * static_cast<float>(d));
  }
  return rows;
}

// A minibatch sampled whole: 300 seeds, two layers, features.
MiniBatch SampledMiniBatch(const CscGraph& graph, int64_t index, int threads) {
  MiniBatch b;
  b.index = index;
  for (int64_t i = 0; i < 300; ++i) b.seeds.push_back((i * 7 + index) % graph.num_nodes());
  Result<std::vector<SampledLayer>> layers =
      SampleMultiLayer(graph, b.seeds, {6, 4}, SamplingOptions{false, false, static_cast<uint64_t>(index), threads});
  EXPECT_TRUE(layers.ok()) << layers.status();
  b.layers = std::move(layers).value();
  b.feature_dim = kDim;
  b.features = FeatureRows(b.layers.back().unique_nodes);
  return b;
}

const CscGraph& TestGraph() {
  static const CscGraph graph = *GeneratePowerLaw(2000, 30000, 4, false);
  return graph;
}

TEST(MiniBatchTest, EncodingRoundTripsAndRejectsTruncation) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 1, 1);
  Result<std::string> bytes = EncodeMiniBatch(batch);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  Result<MiniBatch> decoded = DecodeMiniBatch(*bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(*decoded == batch);
  for (size_t cut : {size_t{3}, bytes->size() / 2, bytes->size() - 8}) {
    EXPECT_EQ(DecodeMiniBatch(std::string_view(*bytes).substr(0, cut)).status().code(), StatusCode::kDataLoss) << cut;
  }
}

TEST(MiniBatchTest, DecodingAnUnalignedCopyGivesTheSameMinibatch) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 2, 1);
  const std::string bytes = *EncodeMiniBatch(batch);
  // The arrays one byte off their alignment: the copying path. (On x86 the
  // aligned path would read these as well, so this checks the fallback's
  // result, not that the alignment test is there.)
  std::string shifted = " " + bytes;
  Result<MiniBatch> decoded = DecodeMiniBatch(std::string_view(shifted).substr(1));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_TRUE(*decoded == batch);
}

// A worker's path: the writer is the sampler's sink, the features go where
// Features() says, and what the segment holds decodes to the minibatch
// sampled whole, on 1 thread and on 3 (chunks of 37 and of 12 seeds in
// layer 0).
TEST(MiniBatchTest, AMinibatchStreamedAsItIsSampledDecodesToTheWholeOne) {
  const std::string name = "/faultline-minibatch-test-" + std::to_string(getpid()) + "-stream";
  SegmentWriter segment(name);
  SegmentReader reader(name);
  for (int threads : {1, 3}) {
    for (int64_t index : {4, 5}) {  // the second reuses the segment
      SCOPED_TRACE(std::to_string(threads) + " threads, minibatch " + std::to_string(index));
      const MiniBatch whole = SampledMiniBatch(TestGraph(), index, 1);
      MiniBatchWriter writer(segment);
      ASSERT_TRUE(writer.Begin(index, whole.seeds, 2).ok());
      Status sampled = SampleMultiLayerInto(TestGraph(), whole.seeds, {6, 4},
                                            SamplingOptions{false, false, static_cast<uint64_t>(index), threads}, writer);
      ASSERT_TRUE(sampled.ok()) << sampled;
      EXPECT_EQ(writer.unique_nodes(), whole.layers.back().unique_nodes);
      const std::vector<float> rows = FeatureRows(writer.unique_nodes());
      Result<float*> features = writer.Features(kDim, rows.size());
      ASSERT_TRUE(features.ok()) << features.status();
      std::memcpy(*features, rows.data(), rows.size() * sizeof(float));
      ASSERT_TRUE(writer.Finish().ok());
      EXPECT_FALSE(writer.write_failed());
      Result<MiniBatch> read = ReadMiniBatch(reader);
      ASSERT_TRUE(read.ok()) << read.status();
      EXPECT_TRUE(*read == whole);
    }
  }
}

// WriteMiniBatch gives EncodeMiniBatch's bytes. `halfway` runs once per
// minibatch, when the first layer is in: the segment then holds no message
// (its length is 0 until Finish), so a reader can never take a part of one
// for a whole.
TEST(MiniBatchTest, ASegmentHoldsNoMessageUntilTheWriterFinishes) {
  const MiniBatch first = SampledMiniBatch(TestGraph(), 6, 1), second = SampledMiniBatch(TestGraph(), 7, 1);
  const std::string name = "/faultline-minibatch-test-" + std::to_string(getpid()) + "-halfway";
  SegmentWriter writer(name);
  SegmentReader reader(name);
  for (int round = 0; round < 2; ++round) {
    for (const MiniBatch* batch : {&first, &second}) {  // each after the other in the same segment
      const std::string expected = *EncodeMiniBatch(*batch);
      int calls = 0;
      ASSERT_TRUE(WriteMiniBatch(*batch, writer, [&] {
                    ++calls;
                    Result<MiniBatch> partial = ReadMiniBatch(reader);
                    EXPECT_EQ(partial.status().code(), StatusCode::kDataLoss);
                    EXPECT_EQ(partial.status().message(), "minibatch bytes are truncated");
                  }).ok());
      EXPECT_EQ(calls, 1);
      ASSERT_TRUE(reader.Read([&](std::string_view bytes) {
        EXPECT_EQ(bytes, expected);
        return OkStatus();
      }).ok());
      Result<MiniBatch> read = ReadMiniBatch(reader);
      ASSERT_TRUE(read.ok()) << read.status();
      EXPECT_TRUE(*read == *batch);
    }
  }
  EXPECT_FALSE(SharedMemoryExists(name));  // the reader unlinked it
}

// Builds minibatch bytes field by field, for corrupt ones.
struct Bytes {
  std::string out;
  Bytes& U64(uint64_t v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  Bytes& Array(const std::vector<int64_t>& v) {
    U64(v.size());
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
    return *this;
  }
};

// A minibatch of one layer from seed 5, claiming `edges` edges: a first
// chunk with counts chunk_counts[0] and the pick 7 (edge 70), and, when
// chunk_counts has two entries, a second with counts chunk_counts[1], edge
// ids second_chunk_edge_ids and the pick 8. Unique nodes {5, 7, 8}.
std::string OneLayer(uint64_t edges, const std::vector<std::vector<int64_t>>& chunk_counts,
                     const std::vector<int64_t>& second_chunk_edge_ids) {
  Bytes b;
  b.U64(0x66617574424d3032ull).U64(0).Array({5}).U64(1);
  b.Array({5}).U64(edges).U64(chunk_counts.size());
  b.Array(chunk_counts[0]).Array({70}).Array({7}).Array({1});
  if (chunk_counts.size() > 1) b.Array(chunk_counts[1]).Array(second_chunk_edge_ids).Array({8}).Array({2});
  b.Array({5, 7, 8});
  b.U64(0).U64(0);
  return b.out;
}

TEST(MiniBatchTest, CorruptChunksAreDataLossThatSaysWhatIsWrong) {
  Result<MiniBatch> good = DecodeMiniBatch(OneLayer(1, {{1}}, {}));
  ASSERT_TRUE(good.ok()) << good.status();
  const SampledLayer& layer = good->layers[0];
  EXPECT_EQ(layer.subgraph.indptr, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(layer.subgraph.indices, (std::vector<int64_t>{7}));
  EXPECT_EQ(layer.subgraph.original_edge_ids, (std::vector<int64_t>{70}));
  EXPECT_EQ(layer.compacted_indices, (std::vector<int64_t>{1}));
  EXPECT_EQ(layer.unique_nodes, (std::vector<int64_t>{5, 7, 8}));

  auto message = [](const std::string& bytes) {
    Result<MiniBatch> decoded = DecodeMiniBatch(bytes);
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << decoded.status();
    return decoded.status().message();
  };
  EXPECT_EQ(message(OneLayer(1, {{-1}}, {})),
            "minibatch bytes are corrupt: a seed's count -1 is negative or past the layer's 1 edges");
  EXPECT_EQ(message(OneLayer(1, {{2}}, {})),
            "minibatch bytes are corrupt: a seed's count 2 is negative or past the layer's 1 edges");
  EXPECT_EQ(message(OneLayer(2, {{1}, {1}}, {80})),
            "minibatch bytes are corrupt: the chunks hold counts for more than the layer's 1 seeds");
  EXPECT_EQ(message(OneLayer(2, {{1}, {}}, {80})),
            "minibatch bytes are corrupt: a chunk has 1 edge ids for 0 edges");
  EXPECT_EQ(message(OneLayer(2, {{1}}, {})),
            "minibatch bytes are corrupt: a layer's chunks hold 1 seeds and 1 edges; the layer has 1 seeds and 2 "
            "edges");
  EXPECT_EQ(message(OneLayer(1, {{}}, {})),
            "minibatch bytes are corrupt: a chunk has 1 edge ids for 0 edges");
  std::string many_chunks = OneLayer(1, {{1}}, {});
  const uint64_t chunks = uint64_t{1} << 40;
  // The chunk count's offset: magic, index, seeds (count, 5), layers,
  // layer seeds (count, 5), edges: eight 8-byte fields.
  std::memcpy(&many_chunks[64], &chunks, sizeof(chunks));
  EXPECT_EQ(message(many_chunks),
            "minibatch bytes are corrupt: a layer claims 1 edges in 1099511627776 chunks but 112 bytes are left");
  EXPECT_EQ(message(OneLayer(uint64_t{1} << 60, {{1}}, {})),
            "minibatch bytes are corrupt: a layer claims 1152921504606846976 edges in 1 chunks but 112 bytes are left");
}

// Calls out of order fail and name the order; after a failure every call
// but Begin fails, and Begin starts over.
TEST(MiniBatchTest, AWriterUsedOutOfOrderSaysSoAndStaysFailedUntilBegin) {
  std::string out;
  MiniBatchWriter writer(out);
  auto begin = [&] { ASSERT_TRUE(writer.Begin(0, {1, 2}, 1).ok()); };
  begin();
  EXPECT_EQ(writer.Finish().message(), "MiniBatchWriter: the minibatch ended before its features");
  EXPECT_EQ(writer.BeginLayer(0, {1, 2}, 0).message(), "MiniBatchWriter: an earlier call failed");
  begin();
  EXPECT_EQ(writer.Features(2, 4).status().message(), "MiniBatchWriter: features came before the last layer ended");
  begin();
  EXPECT_EQ(writer.AddChunk(SampledChunk{}).status().message(), "MiniBatchWriter: a chunk came outside a layer");
  begin();
  EXPECT_EQ(writer.EndLayer({}).status().message(), "MiniBatchWriter: a layer ended that had not begun");
  begin();
  ASSERT_TRUE(writer.BeginLayer(0, {1, 2}, 0).ok());
  EXPECT_EQ(writer.BeginLayer(1, {1, 2}, 0).message(), "MiniBatchWriter: a layer began with no layer left to write");
  begin();
  ASSERT_TRUE(writer.BeginLayer(0, {1, 2}, 0).ok());
  EXPECT_EQ(writer.EndLayer({1, 2}).status().message(), "MiniBatchWriter: a layer of 2 seeds ended with the counts of 0");
  SampledChunk no_picks;  // the chunk of both seeds, with no edges
  no_picks.counts = {0, 0};
  begin();
  ASSERT_TRUE(writer.BeginLayer(0, {1, 2}, 0).ok());
  ASSERT_TRUE(writer.AddChunk(no_picks).ok());
  ASSERT_TRUE(writer.EndLayer({1, 2}).ok());
  ASSERT_TRUE(writer.Features(0, 0).ok());
  EXPECT_EQ(writer.Features(0, 0).status().message(), "MiniBatchWriter: features came twice");
  // In order, after all that: a minibatch that decodes.
  begin();
  ASSERT_TRUE(writer.BeginLayer(0, {1, 2}, 0).ok());
  ASSERT_TRUE(writer.AddChunk(no_picks).ok());
  ASSERT_TRUE(writer.EndLayer({1, 2}).ok());
  ASSERT_TRUE(writer.Features(0, 0).ok());
  ASSERT_TRUE(writer.Finish().ok());
  Result<MiniBatch> decoded = DecodeMiniBatch(out);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->layers.at(0).unique_nodes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(decoded->layers.at(0).subgraph.indptr, (std::vector<int64_t>{0, 0, 0}));

  MiniBatch inconsistent;  // a layer with a seed and no indptr
  inconsistent.layers.resize(1);
  inconsistent.layers[0].subgraph.seeds = {1};
  EXPECT_EQ(EncodeMiniBatch(inconsistent).status().message(),
            "a layer of 1 seeds has 0 indptr entries, 0 indices, 0 edge ids and 0 compacted indices");
}

}  // namespace
}  // namespace faultline
