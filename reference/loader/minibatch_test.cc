// Checks the minibatch encoding: it round-trips, a minibatch streamed in as
// it is sampled (MiniBatchWriter as the sampler's LayerSink, in as many
// chunks as the threads make, its regions grown as they fill) reads back as
// the minibatch sampled whole, a view keeps its segment mapped, a segment
// holds no message until the writer finishes, and corrupt layers or a
// misused writer are errors that say what is wrong.
#include "reference/loader/minibatch.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/status_matchers.h"
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
  FL_EXPECT_OK(layers);
  b.layers = std::move(layers).value();
  b.feature_dim = kDim;
  b.features = FeatureRows(b.layers.back().unique_nodes);
  return b;
}

// A name that labels a test's segment in messages and /proc.
std::string TestSegmentName(const std::string& what) { return ProcessSegmentPrefix("minibatch-test-") + what; }

// Creates segment `name`, or fails the test and returns -1 (on which every
// call of a writer or reader then fails). Pass it to a SegmentReader, and
// dup(reader.fd()) to the SegmentWriter: each end its own descriptor, as
// the main process and a worker hold theirs.
int NewSegment(const std::string& name) {
  Result<int> fd = CreateUnlinkedSegment(name);
  FL_EXPECT_OK(fd);
  return fd.ok() ? *fd : -1;
}

const CscGraph& TestGraph() {
  static const CscGraph graph = *GeneratePowerLaw(2000, 30000, 4, false);
  return graph;
}

TEST(MiniBatchTest, EncodingRoundTripsAndRejectsTruncation) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 1, 1);
  Result<std::string> bytes = EncodeMiniBatch(batch);
  FL_ASSERT_OK(bytes);
  Result<MiniBatch> decoded = DecodeMiniBatch(*bytes);
  FL_ASSERT_OK(decoded);
  EXPECT_TRUE(*decoded == batch);
  for (size_t cut : {size_t{3}, bytes->size() / 2, bytes->size() - 8}) {
    EXPECT_EQ(DecodeMiniBatch(std::string_view(*bytes).substr(0, cut)).status().code(), StatusCode::kDataLoss) << cut;
  }
}

// What the layout cannot hold, or a reader would reject, is refused when
// encoding, naming the layer: layers that do not chain, an indptr that
// does not rise.
TEST(MiniBatchTest, EncodingRefusesWhatAReaderWouldReject) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 1, 1);
  ASSERT_EQ(batch.layers.size(), 2u);
  MiniBatch unchained = batch;
  unchained.layers[0].unique_nodes.push_back(unchained.layers[0].unique_nodes.front());
  Result<std::string> refused = EncodeMiniBatch(unchained);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "layer 1: its " + std::to_string(batch.layers[1].subgraph.seeds.size()) +
                                            " seeds are not the previous layer's unique nodes (" +
                                            std::to_string(unchained.layers[0].unique_nodes.size()) + ")");
  MiniBatch other_seeds = batch;
  other_seeds.seeds.back() += 1;
  EXPECT_EQ(EncodeMiniBatch(other_seeds).status().message(),
            "layer 0: its 300 seeds are not the minibatch's seeds (300)");
  MiniBatch seeds_not_first = batch;
  std::vector<int64_t>& unique = seeds_not_first.layers[0].unique_nodes;
  std::swap(unique[0], unique.back());
  EXPECT_EQ(EncodeMiniBatch(seeds_not_first).status().message(),
            "layer 0: its " + std::to_string(unique.size()) + " unique nodes do not start with its 300 seeds");
  MiniBatch falling = batch;
  std::vector<int64_t>& indptr = falling.layers[1].subgraph.indptr;
  indptr[1] = indptr.back() + 1;  // seed 0's end past every edge: seed 1's end falls below it
  EXPECT_EQ(EncodeMiniBatch(falling).status().message(), "layer 1: indptr decreases from " + std::to_string(indptr[1]) +
                                                             " to " + std::to_string(indptr[2]) + " at seed 1");
  // Refused into a segment: the segment then holds no minibatch, not the
  // one written before.
  const std::string name = TestSegmentName("refused");
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter segment(name, dup(reader.fd()));
  FL_ASSERT_OK(WriteMiniBatch(batch, segment));
  EXPECT_EQ(WriteMiniBatch(unchained, segment).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadMiniBatch(reader).status().message(), "minibatch bytes are truncated");
  // The writer's AddLayer checks the indptr too (it takes one layer).
  std::string out;
  MiniBatchWriter writer(out);
  FL_ASSERT_OK(writer.Begin(falling.index, falling.layers[1].subgraph.seeds, 1));
  Status added = writer.AddLayer(falling.layers[1]);
  EXPECT_EQ(added.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(added.message(),
            "indptr decreases from " + std::to_string(indptr[1]) + " to " + std::to_string(indptr[2]) + " at seed 1");
}

TEST(MiniBatchTest, DecodingAnUnalignedCopyGivesTheSameMinibatch) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 2, 1);
  const std::string bytes = *EncodeMiniBatch(batch);
  // The arrays one byte off their alignment: the copying path. (On x86 the
  // aligned path would read these as well, so this checks the fallback's
  // result, not that the alignment test is there.)
  std::string shifted = " " + bytes;
  Result<MiniBatch> decoded = DecodeMiniBatch(std::string_view(shifted).substr(1));
  FL_ASSERT_OK(decoded);
  EXPECT_TRUE(*decoded == batch);
}

// Passes everything on to a MiniBatchWriter, but expects `expected_edges`
// edges of every layer: with 1, the writer's regions fill and move apart
// again and again.
class WithExpectedEdges : public LayerSink {
 public:
  WithExpectedEdges(MiniBatchWriter& writer, size_t expected_edges) : writer_(writer), expected_(expected_edges) {}
  Status BeginLayer(uint32_t layer, const std::vector<int64_t>& seeds, size_t) override {
    return writer_.BeginLayer(layer, seeds, expected_);
  }
  Result<int64_t*> AddChunk(const SampledChunk& chunk) override { return writer_.AddChunk(chunk); }
  Result<const std::vector<int64_t>*> EndLayer(std::vector<int64_t> unique_nodes) override {
    return writer_.EndLayer(std::move(unique_nodes));
  }

 private:
  MiniBatchWriter& writer_;
  size_t expected_;
};

// A worker's path: the writer is the sampler's sink, the features go where
// Features() says, and what the segment holds reads back as the minibatch
// sampled whole, on 1 thread and on 3 (chunks of 37 and of 12 seeds in
// layer 0), with the sampler's expected edges and with 1 (regions grown).
TEST(MiniBatchTest, AMinibatchStreamedAsItIsSampledReadsBackAsTheWholeOne) {
  const std::string name = TestSegmentName("stream");
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter segment(name, dup(reader.fd()));
  for (size_t expected_edges : {size_t{0}, size_t{1}}) {  // 0: the sampler's
    for (int threads : {1, 3}) {
      for (int64_t index : {4, 5}) {  // the second reuses the segment
        SCOPED_TRACE(std::to_string(threads) + " threads, minibatch " + std::to_string(index) + ", expected edges " +
                     std::to_string(expected_edges));
        const MiniBatch whole = SampledMiniBatch(TestGraph(), index, 1);
        MiniBatchWriter writer(segment);
        WithExpectedEdges hinted(writer, expected_edges);
        LayerSink& sink = expected_edges == 0 ? static_cast<LayerSink&>(writer) : hinted;
        FL_ASSERT_OK(writer.Begin(index, whole.seeds, 2));
        Status sampled =
            SampleMultiLayerInto(TestGraph(), whole.seeds, {6, 4},
                                 SamplingOptions{false, false, static_cast<uint64_t>(index), threads}, sink);
        FL_ASSERT_OK(sampled);
        EXPECT_EQ(writer.unique_nodes(), whole.layers.back().unique_nodes);
        const std::vector<float> rows = FeatureRows(writer.unique_nodes());
        Result<float*> features = writer.Features(kDim, rows.size());
        FL_ASSERT_OK(features);
        std::memcpy(*features, rows.data(), rows.size() * sizeof(float));
        FL_ASSERT_OK(writer.Finish());
        EXPECT_FALSE(writer.write_failed());
        Result<MiniBatchView> read = ReadMiniBatch(reader);
        FL_ASSERT_OK(read);
        EXPECT_TRUE(read->ToMiniBatch() == whole);
      }
    }
  }
}

// A view keeps what it points into: a minibatch the loader built, or a
// segment's mapping after its reader is gone (ASan sees a read of an
// unmapped or freed array).
TEST(MiniBatchTest, AViewKeepsItsBytes) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 8, 1);
  MiniBatchView of_built = MiniBatchView::Of(std::make_shared<const MiniBatch>(batch));
  const std::string name = TestSegmentName("hold");
  auto reader = std::make_unique<SegmentReader>(name, NewSegment(name));
  SegmentWriter writer(name, dup(reader->fd()));
  FL_ASSERT_OK(WriteMiniBatch(batch, writer));
  Result<MiniBatchView> of_segment = ReadMiniBatch(*reader);
  FL_ASSERT_OK(of_segment);
  reader.reset();
  EXPECT_TRUE(of_built.ToMiniBatch() == batch);
  EXPECT_TRUE(of_segment->ToMiniBatch() == batch);
  EXPECT_EQ(of_segment->layers.at(1).compacted_indices.data()[0], batch.layers.at(1).compacted_indices.at(0));

  const std::string bytes = " " + *EncodeMiniBatch(batch);
  EXPECT_EQ(ViewMiniBatch(std::string_view(bytes).substr(1)).status().message(),
            "ViewMiniBatch: the bytes do not start 8-byte aligned");
}

// A view's mapping stays when its reader maps a segment the writer grew
// again; it shows what the segment holds (the loader never writes a held
// slot, so there it is the view's minibatch).
TEST(MiniBatchTest, AViewKeepsItsMappingWhenTheReaderRemaps) {
  const MiniBatch batch = SampledMiniBatch(TestGraph(), 9, 1);
  const std::string name = TestSegmentName("remap");
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter writer(name, dup(reader.fd()));
  FL_ASSERT_OK(WriteMiniBatch(batch, writer));
  Result<MiniBatchView> view = ReadMiniBatch(reader);
  FL_ASSERT_OK(view);
  const std::string larger(4 * EncodeMiniBatch(batch)->size(), 'x');
  FL_ASSERT_OK(writer.Write(larger));
  FL_ASSERT_OK(reader.Read([&](std::string_view bytes) {
    EXPECT_EQ(bytes.size(), larger.size());  // mapped again, larger
    return OkStatus();
  }));
  int64_t xs = 0;
  std::memset(&xs, 'x', sizeof(xs));
  EXPECT_EQ(view->seeds[0], xs);  // the old mapping: still readable, the segment's bytes
}

// WriteMiniBatch gives EncodeMiniBatch's bytes. `halfway` runs once per
// minibatch, when the first layer is in: the segment then holds no message
// (its length is 0 until Finish), so a reader can never take a part of one
// for a whole.
TEST(MiniBatchTest, ASegmentHoldsNoMessageUntilTheWriterFinishes) {
  const MiniBatch first = SampledMiniBatch(TestGraph(), 6, 1), second = SampledMiniBatch(TestGraph(), 7, 1);
  const std::string name = TestSegmentName("halfway");
  SegmentReader reader(name, NewSegment(name));
  SegmentWriter writer(name, dup(reader.fd()));
  for (int round = 0; round < 2; ++round) {
    for (const MiniBatch* batch : {&first, &second}) {  // each after the other in the same segment
      const std::string expected = *EncodeMiniBatch(*batch);
      int calls = 0;
      FL_ASSERT_OK(WriteMiniBatch(*batch, writer, [&] {
        ++calls;
        Result<MiniBatchView> partial = ReadMiniBatch(reader);
        EXPECT_EQ(partial.status().code(), StatusCode::kDataLoss);
        EXPECT_EQ(partial.status().message(), "minibatch bytes are truncated");
      }));
      EXPECT_EQ(calls, 1);
      FL_ASSERT_OK(reader.Read([&](std::string_view bytes) {
        EXPECT_EQ(bytes, expected);
        return OkStatus();
      }));
      Result<MiniBatchView> read = ReadMiniBatch(reader);
      FL_ASSERT_OK(read);
      EXPECT_TRUE(read->ToMiniBatch() == *batch);
    }
  }
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

// A one-layer minibatch's fields, as the bytes hold them.
struct LayerFields {
  uint64_t seeds = 1;   // the minibatch's, which are the layer's
  uint64_t unique = 3;  // how many of the nodes are the layer's unique nodes
  uint64_t edges = 1, capacity = 1;
  std::vector<int64_t> indptr = {0, 1};
  std::vector<int64_t> edge_ids = {70}, indices = {7}, compacted = {1};  // `capacity` values each
  std::vector<int64_t> nodes = {5, 7, 8};
};

// A minibatch of the one layer `l`, with `features` of dimension `dim`.
std::string OneLayer(const LayerFields& l, uint64_t dim = 0, std::vector<float> features = {}) {
  Bytes b;
  b.U64(0x66617574424d3034ull).U64(0).U64(l.seeds).U64(1);
  b.U64(l.unique).U64(l.edges).U64(l.capacity);
  for (const std::vector<int64_t>* values : {&l.indptr, &l.edge_ids, &l.indices, &l.compacted}) {
    b.out.append(reinterpret_cast<const char*>(values->data()), values->size() * sizeof(int64_t));
  }
  b.Array(l.nodes).U64(dim).U64(features.size());
  b.out.append(reinterpret_cast<const char*>(features.data()), features.size() * sizeof(float));
  return b.out;
}

TEST(MiniBatchTest, CorruptLayersAreDataLossThatSaysWhatIsWrong) {
  LayerFields with_room;  // one edge in room for two: the room left is not read
  with_room.capacity = 2;
  with_room.edge_ids = {70, -1};
  with_room.indices = {7, -1};
  with_room.compacted = {1, 99};
  Result<MiniBatch> good = DecodeMiniBatch(OneLayer(with_room));
  FL_ASSERT_OK(good);
  const SampledLayer& layer = good->layers[0];
  EXPECT_EQ(layer.subgraph.indptr, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(layer.subgraph.indices, (std::vector<int64_t>{7}));
  EXPECT_EQ(layer.subgraph.original_edge_ids, (std::vector<int64_t>{70}));
  EXPECT_EQ(layer.compacted_indices, (std::vector<int64_t>{1}));
  EXPECT_EQ(layer.unique_nodes, (std::vector<int64_t>{5, 7, 8}));

  auto message = [](const LayerFields& l, uint64_t dim = 0, std::vector<float> features = {}) {
    Result<MiniBatch> decoded = DecodeMiniBatch(OneLayer(l, dim, std::move(features)));
    EXPECT_EQ(decoded.status().code(), StatusCode::kDataLoss) << decoded.status();
    return decoded.status().message();
  };
  LayerFields l;
  l.indptr = {1, 1};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: indptr starts at 1, not 0");
  l = LayerFields();
  l.seeds = 2;
  l.nodes = {5, 6, 8};
  l.indptr = {0, 2, 1};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: indptr decreases from 2 to 1 at seed 1");
  l = LayerFields();
  l.indptr = {0, 0};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: indptr ends at 0; the layer has 1 edges");
  l = LayerFields();
  l.edges = 2;
  l.indptr = {0, 2};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: a layer claims 2 edges in room for 1");
  l = LayerFields();
  l.capacity = uint64_t{1} << 60;
  EXPECT_EQ(message(l),
            "layer 0: minibatch bytes are corrupt: a layer claims room for 1152921504606846976 edges but 72 bytes "
            "are left");
  l = LayerFields();
  l.compacted = {3};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: compacted index 3 is outside the 3 unique nodes");
  l.compacted = {-1};
  EXPECT_EQ(message(l), "layer 0: minibatch bytes are corrupt: compacted index -1 is outside the 3 unique nodes");
  // Node counts that do not fit the nodes: fewer unique nodes than seeds,
  // more than the bytes hold, a nodes array of another length.
  l = LayerFields();
  l.unique = 0;
  EXPECT_EQ(message(l),
            "layer 0: minibatch bytes are corrupt: a layer of 1 seeds claims 0 unique nodes, with 88 "
            "bytes left");
  l.unique = uint64_t{1} << 40;
  EXPECT_EQ(message(l),
            "layer 0: minibatch bytes are corrupt: a layer of 1 seeds claims 1099511627776 unique "
            "nodes, with 88 bytes left");
  l = LayerFields();
  l.seeds = 1ull << 62;
  EXPECT_EQ(message(l),
            "layer 0: minibatch bytes are corrupt: a layer of 4611686018427387904 seeds claims 3 "
            "unique nodes, with 88 bytes left");
  l = LayerFields();
  l.nodes = {5, 7};
  EXPECT_EQ(message(l),
            "minibatch bytes are corrupt: the nodes array holds 2 nodes; the last layer's unique nodes "
            "are 3");
  EXPECT_EQ(message(LayerFields(), 2, {1, 2, 3}),
            "minibatch bytes are corrupt: 3 feature values for 3 unique nodes of dimension 2");
  Bytes no_layers;  // two seeds, no layer, one node
  no_layers.U64(0x66617574424d3034ull).U64(0).U64(2).U64(0).Array({5}).U64(0).U64(0);
  EXPECT_EQ(DecodeMiniBatch(no_layers.out).status().message(),
            "minibatch bytes are corrupt: the nodes array holds 1 nodes; the minibatch's seeds are 2");
  std::string wrong_magic = OneLayer(LayerFields());
  wrong_magic[0] = 'x';
  EXPECT_EQ(DecodeMiniBatch(wrong_magic).status().message(),
            "minibatch bytes do not start with the minibatch magic word");
}

// Calls out of order fail and name the order; after a failure every call
// but Begin fails, and Begin starts over.
// As a sink (a worker's path), the writer refuses layers that do not chain:
// seeds that are not the nodes so far, unique nodes that do not start with
// the seeds. Seeds that are the very vector EndLayer returned chain.
TEST(MiniBatchTest, AStreamingWriterRefusesLayersThatDoNotChain) {
  const MiniBatch whole = SampledMiniBatch(TestGraph(), 1, 1);
  const SampledLayer& first = whole.layers[0];
  std::string out;
  MiniBatchWriter writer(out);
  auto stream_first_layer = [&](const std::vector<int64_t>& seeds) -> Result<const std::vector<int64_t>*> {
    FL_RETURN_IF_ERROR(writer.BeginLayer(0, seeds, first.subgraph.indices.size()));
    SampledChunk chunk;
    chunk.counts.resize(first.subgraph.seeds.size());
    for (size_t i = 0; i < chunk.counts.size(); ++i)
      chunk.counts[i] = first.subgraph.indptr[i + 1] - first.subgraph.indptr[i];
    const int64_t edges = static_cast<int64_t>(first.subgraph.indices.size());
    chunk.indices.Resize(edges);
    chunk.original_edge_ids.Resize(edges);
    std::memcpy(chunk.indices.data(), first.subgraph.indices.data(), edges * sizeof(int64_t));
    std::memcpy(chunk.original_edge_ids.data(), first.subgraph.original_edge_ids.data(), edges * sizeof(int64_t));
    FL_ASSIGN_OR_RETURN(int64_t * compacted, writer.AddChunk(chunk));
    std::memcpy(compacted, first.compacted_indices.data(), first.compacted_indices.size() * sizeof(int64_t));
    return writer.EndLayer(first.unique_nodes);
  };
  FL_ASSERT_OK(writer.Begin(1, whole.seeds, 2));
  std::vector<int64_t> other_seeds = whole.seeds;
  other_seeds[0] += 1;
  EXPECT_EQ(stream_first_layer(other_seeds).status().message(), "its 300 seeds are not the minibatch's seeds (300)");

  FL_ASSERT_OK(writer.Begin(1, whole.seeds, 2));
  Result<const std::vector<int64_t>*> nodes = stream_first_layer(whole.seeds);
  FL_ASSERT_OK(nodes);
  EXPECT_EQ(**nodes, first.unique_nodes);
  // The next layer from the very vector (no comparison), with unique nodes
  // that do not start with its seeds.
  const SampledLayer& second = whole.layers[1];
  FL_ASSERT_OK(writer.BeginLayer(1, **nodes, 0));
  SampledChunk chunk;
  chunk.counts.assign(second.subgraph.seeds.size(), 0);
  FL_ASSERT_OK(writer.AddChunk(chunk));
  std::vector<int64_t> unique = second.unique_nodes;
  std::swap(unique[0], unique[1]);
  EXPECT_EQ(writer.EndLayer(unique).status().message(), "its " + std::to_string(unique.size()) +
                                                            " unique nodes do not start with its " +
                                                            std::to_string(second.subgraph.seeds.size()) + " seeds");
}

TEST(MiniBatchTest, AWriterUsedOutOfOrderSaysSoAndStaysFailedUntilBegin) {
  std::string out;
  MiniBatchWriter writer(out);
  auto begin = [&] { FL_ASSERT_OK(writer.Begin(0, {1, 2}, 1)); };
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
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  EXPECT_EQ(writer.BeginLayer(1, {1, 2}, 0).message(), "MiniBatchWriter: a layer began with no layer left to write");
  begin();
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  EXPECT_EQ(writer.EndLayer({1, 2}).status().message(),
            "MiniBatchWriter: a layer of 2 seeds ended with the counts of 0");
  SampledChunk three_seeds;
  three_seeds.counts = {0, 0, 0};
  begin();
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  EXPECT_EQ(writer.AddChunk(three_seeds).status().message(),
            "MiniBatchWriter: a chunk holds counts past the layer's 2 seeds");
  SampledChunk counts_past_edges;  // counts of 1 edge, and no edge
  counts_past_edges.counts = {1, 0};
  begin();
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  EXPECT_EQ(writer.AddChunk(counts_past_edges).status().message(),
            "MiniBatchWriter: a chunk's counts add up to 1 edges; it has 0");
  SampledChunk no_picks;  // the chunk of both seeds, with no edges
  no_picks.counts = {0, 0};
  begin();
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  FL_ASSERT_OK(writer.AddChunk(no_picks));
  FL_ASSERT_OK(writer.EndLayer({1, 2}));
  FL_ASSERT_OK(writer.Features(0, 0));
  EXPECT_EQ(writer.Features(0, 0).status().message(), "MiniBatchWriter: features came twice");
  // In order, after all that: a minibatch that decodes.
  begin();
  FL_ASSERT_OK(writer.BeginLayer(0, {1, 2}, 0));
  FL_ASSERT_OK(writer.AddChunk(no_picks));
  FL_ASSERT_OK(writer.EndLayer({1, 2}));
  FL_ASSERT_OK(writer.Features(0, 0));
  FL_ASSERT_OK(writer.Finish());
  Result<MiniBatch> decoded = DecodeMiniBatch(out);
  FL_ASSERT_OK(decoded);
  EXPECT_EQ(decoded->layers.at(0).unique_nodes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(decoded->layers.at(0).subgraph.indptr, (std::vector<int64_t>{0, 0, 0}));

  MiniBatch inconsistent;  // a layer with a seed and no indptr
  inconsistent.layers.resize(1);
  inconsistent.layers[0].subgraph.seeds = {1};
  EXPECT_EQ(EncodeMiniBatch(inconsistent).status().message(),
            "layer 0: a layer of 1 seeds has 0 indptr entries, 0 indices, 0 edge ids and 0 compacted indices");
}

}  // namespace
}  // namespace faultline
