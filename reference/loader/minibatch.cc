// Implements the minibatch encoding: a magic word, then 8-byte counts and
// arrays in a fixed order (each layer's edges in contiguous regions, every
// layer's nodes in one array), and views of it.
#include "reference/loader/minibatch.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace faultline {
namespace {

constexpr uint64_t kMagic = 0x66617574424d3034ull;  // "fautBM04"

// The layout, in order (u64: 8 bytes; array: a u64 count, then the values;
// every field starts 8-byte aligned, so a view can point at the values):
//   magic, index, number of seeds, number of layers;
//   for each layer: number of unique nodes; number of edges; capacity;
//     indptr (one value more than the layer's seeds, no count); three
//     regions of `capacity` values each: original_edge_ids, indices,
//     compacted_indices (the layer's edges first, then room left unused);
//   nodes array; feature_dim, features array (float).
// The layers chain (a layer's seeds are the unique nodes of the one before,
// the first's the minibatch's seeds, and a layer's unique nodes start with
// its seeds), so every node array is a prefix of the last layer's unique
// nodes, and they are stored once, as `nodes`: the minibatch's seeds are its
// first `number of seeds`, a layer's unique nodes its first `number of
// unique nodes`, and a layer's seeds the unique nodes of the one before.
// The chain needs no check on reading: it holds by construction.
constexpr size_t kRegions = 3;

Status Corrupt(const std::string& what) { return DataLossError("minibatch bytes are corrupt: " + what); }

// Takes the fields of a minibatch's bytes in order, where they lie.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  Status U64(uint64_t* v) {
    if (in_.size() < sizeof(*v)) return DataLossError("minibatch bytes are truncated");
    std::memcpy(v, in_.data(), sizeof(*v));
    in_.remove_prefix(sizeof(*v));
    return OkStatus();
  }
  // Takes `n` values.
  template <typename T>
  Result<ArrayView<T>> Take(uint64_t n) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (n > in_.size() / sizeof(T))
      return DataLossError("minibatch array length " + std::to_string(n) + " is past the end");
    ArrayView<T> values(reinterpret_cast<const T*>(in_.data()), n);
    in_.remove_prefix(n * sizeof(T));
    return values;
  }
  // Takes an array's count, then its values.
  template <typename T>
  Result<ArrayView<T>> Array() {
    uint64_t n = 0;
    FL_RETURN_IF_ERROR(U64(&n));
    return Take<T>(n);
  }
  size_t left() const { return in_.size(); }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// What is wrong with the indptr of a layer of `edges` edges ("" if
// nothing): it starts at 0, never decreases and ends at `edges` (so every
// value lies in [0, edges]). `n` is at least 1.
std::string IndptrProblem(const int64_t* indptr, size_t n, uint64_t edges) {
  if (indptr[0] != 0) return "indptr starts at " + std::to_string(indptr[0]) + ", not 0";
  bool decreases = false;  // one pass without an early exit, which the compiler vectorizes
  for (size_t i = 1; i < n; ++i) decreases |= indptr[i] < indptr[i - 1];
  if (decreases) {
    for (size_t i = 1; i < n; ++i) {
      if (indptr[i] < indptr[i - 1]) {
        return "indptr decreases from " + std::to_string(indptr[i - 1]) + " to " + std::to_string(indptr[i]) +
               " at seed " + std::to_string(i - 1);
      }
    }
  }
  if (static_cast<uint64_t>(indptr[n - 1]) != edges) {
    return "indptr ends at " + std::to_string(indptr[n - 1]) + "; the layer has " + std::to_string(edges) + " edges";
  }
  return "";
}

// Whether `values` starts with the values of `prefix`.
bool StartsWith(const std::vector<int64_t>& values, const std::vector<int64_t>& prefix) {
  return values.size() >= prefix.size() &&
         (prefix.empty() || std::memcmp(values.data(), prefix.data(), prefix.size() * sizeof(int64_t)) == 0);
}
// Whether `a` and `b` hold the same values (a layer's seeds are often the
// very vector that holds the unique nodes of the layer before).
bool SameValues(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return &a == &b || (a.size() == b.size() && StartsWith(a, b));
}
// What is wrong with the sizes of a layer's arrays ("" if nothing).
std::string ShapeProblem(const SampledLayer& layer) {
  const SampledSubgraph& s = layer.subgraph;
  if (s.indptr.size() == s.seeds.size() + 1 && s.original_edge_ids.size() == s.indices.size() &&
      layer.compacted_indices.size() == s.indices.size()) {
    return "";
  }
  return "a layer of " + std::to_string(s.seeds.size()) + " seeds has " + std::to_string(s.indptr.size()) +
         " indptr entries, " + std::to_string(s.indices.size()) + " indices, " +
         std::to_string(s.original_edge_ids.size()) + " edge ids and " +
         std::to_string(layer.compacted_indices.size()) + " compacted indices";
}

// Every compacted index points into unique_nodes.
Status CheckCompacted(ArrayView<int64_t> compacted, uint64_t unique) {
  bool outside = false;                                                       // as in IndptrProblem
  for (int64_t c : compacted) outside |= static_cast<uint64_t>(c) >= unique;  // a negative c is huge here
  if (!outside) return OkStatus();
  for (int64_t c : compacted) {
    if (static_cast<uint64_t>(c) >= unique) {
      return Corrupt("compacted index " + std::to_string(c) + " is outside the " + std::to_string(unique) +
                     " unique nodes");
    }
  }
  return OkStatus();
}

// Views layer fields up to its regions; `seeds` is how many seeds it has,
// and `*unique` is set to how many unique nodes (the nodes array comes
// after the layers: the caller points seeds and unique_nodes into it).
Status ViewLayer(Reader& r, uint64_t seeds, LayerView& l, uint64_t* unique) {
  uint64_t edges = 0, capacity = 0;
  FL_RETURN_IF_ERROR(r.U64(unique));
  FL_RETURN_IF_ERROR(r.U64(&edges));
  FL_RETURN_IF_ERROR(r.U64(&capacity));
  if (*unique < seeds || *unique > r.left() / sizeof(int64_t)) {  // the nodes are still to come
    return Corrupt("a layer of " + std::to_string(seeds) + " seeds claims " + std::to_string(*unique) +
                   " unique nodes, with " + std::to_string(r.left()) + " bytes left");
  }
  FL_ASSIGN_OR_RETURN(l.indptr, r.Take<int64_t>(seeds + 1));  // seeds <= unique fit in the bytes: no overflow
  if (capacity > r.left() / (kRegions * sizeof(int64_t))) {
    return Corrupt("a layer claims room for " + std::to_string(capacity) + " edges but " + std::to_string(r.left()) +
                   " bytes are left");
  }
  if (edges > capacity) {
    return Corrupt("a layer claims " + std::to_string(edges) + " edges in room for " + std::to_string(capacity));
  }
  const std::string indptr = IndptrProblem(l.indptr.data(), l.indptr.size(), edges);
  if (!indptr.empty()) return Corrupt(indptr);
  ArrayView<int64_t>* regions[kRegions] = {&l.original_edge_ids, &l.indices, &l.compacted_indices};
  for (ArrayView<int64_t>* region : regions) {
    FL_ASSIGN_OR_RETURN(ArrayView<int64_t> room, r.Take<int64_t>(capacity));
    *region = ArrayView<int64_t>(room.data(), edges);
  }
  return CheckCompacted(l.compacted_indices, *unique);
}

}  // namespace

bool MiniBatch::operator==(const MiniBatch& o) const {
  if (index != o.index || seeds != o.seeds || feature_dim != o.feature_dim || features != o.features ||
      layers.size() != o.layers.size()) {
    return false;
  }
  for (size_t k = 0; k < layers.size(); ++k) {
    const SampledLayer &a = layers[k], &b = o.layers[k];
    if (a.subgraph.seeds != b.subgraph.seeds || a.subgraph.indptr != b.subgraph.indptr ||
        a.subgraph.indices != b.subgraph.indices || a.subgraph.original_edge_ids != b.subgraph.original_edge_ids ||
        a.unique_nodes != b.unique_nodes || a.compacted_indices != b.compacted_indices) {
      return false;
    }
  }
  return true;
}

// Where a MiniBatchWriter's bytes go.
class MiniBatchWriter::Bytes {
 public:
  virtual ~Bytes() = default;
  virtual Status Begin() = 0;
  // Makes room for `size` bytes in all (a hint).
  virtual Status Reserve(size_t size) = 0;
  // Appends n bytes; returns where they go (valid until the next Extend).
  virtual Result<char*> Extend(size_t n) = 0;
  virtual char* At(size_t offset) = 0;
  virtual size_t size() const = 0;
  virtual void Finish() = 0;
};

namespace {

class SegmentBytes : public MiniBatchWriter::Bytes {
 public:
  explicit SegmentBytes(SegmentWriter& segment) : segment_(segment) {}
  Status Begin() override { return segment_.Begin(); }
  Status Reserve(size_t size) override { return segment_.Reserve(size); }
  Result<char*> Extend(size_t n) override { return segment_.Extend(n); }
  char* At(size_t offset) override { return segment_.At(offset); }
  size_t size() const override { return segment_.size(); }
  void Finish() override { segment_.Finish(); }

 private:
  SegmentWriter& segment_;
};

class StringBytes : public MiniBatchWriter::Bytes {
 public:
  explicit StringBytes(std::string& out) : out_(out) {}
  Status Begin() override {
    out_.clear();
    return OkStatus();
  }
  Status Reserve(size_t size) override {
    out_.reserve(size);
    return OkStatus();
  }
  Result<char*> Extend(size_t n) override {
    const size_t size = out_.size();
    out_.resize(size + n);
    return out_.data() + size;
  }
  char* At(size_t offset) override { return out_.data() + offset; }
  size_t size() const override { return out_.size(); }
  void Finish() override {}

 private:
  std::string& out_;
};

}  // namespace

MiniBatchWriter::MiniBatchWriter(SegmentWriter& segment, std::function<void()> halfway)
    : bytes_(std::make_unique<SegmentBytes>(segment)), halfway_(std::move(halfway)) {}
MiniBatchWriter::MiniBatchWriter(std::string& out) : bytes_(std::make_unique<StringBytes>(out)) {}
MiniBatchWriter::~MiniBatchWriter() = default;

Status MiniBatchWriter::Expect(State state, const char* what) {
  if (state_ == state) return OkStatus();
  if (state_ == State::kFailed) return FailedPreconditionError("MiniBatchWriter: an earlier call failed");
  return Fail(FailedPreconditionError(std::string("MiniBatchWriter: ") + what));
}

Status MiniBatchWriter::Fail(Status status) {
  state_ = State::kFailed;
  return status;
}

Status MiniBatchWriter::WriteFailed(Status status) {
  write_failed_ = true;
  return Fail(std::move(status));
}

Result<char*> MiniBatchWriter::Extend(size_t n) {
  Result<char*> out = bytes_->Extend(n);
  if (!out.ok()) return WriteFailed(out.status());
  return out;
}

Status MiniBatchWriter::U64(uint64_t v) {
  FL_ASSIGN_OR_RETURN(char* out, Extend(sizeof(v)));
  std::memcpy(out, &v, sizeof(v));
  return OkStatus();
}

Status MiniBatchWriter::Array(const void* data, uint64_t count, size_t element_bytes) {
  FL_RETURN_IF_ERROR(U64(count));
  FL_ASSIGN_OR_RETURN(char* out, Extend(count * element_bytes));
  if (count > 0) std::memcpy(out, data, count * element_bytes);
  return OkStatus();
}

Status MiniBatchWriter::Begin(int64_t index, const std::vector<int64_t>& seeds, size_t num_layers) {
  write_failed_ = false;
  in_layer_ = false;
  layers_left_ = num_layers;
  halfway_due_ = static_cast<bool>(halfway_);
  Status begun = bytes_->Begin();
  if (!begun.ok()) return WriteFailed(begun);
  FL_RETURN_IF_ERROR(U64(kMagic));
  FL_RETURN_IF_ERROR(U64(static_cast<uint64_t>(index)));
  FL_RETURN_IF_ERROR(U64(seeds.size()));
  FL_RETURN_IF_ERROR(U64(num_layers));
  if (&seeds != &nodes()) nodes().assign(seeds.begin(), seeds.end());  // the nodes so far; written after the last layer
  layer_ = 0;
  state_ = State::kLayers;
  return OkStatus();
}

Status MiniBatchWriter::BeginLayer(uint32_t, const std::vector<int64_t>& seeds, size_t expected_edges) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a layer began after the features"));
  if (in_layer_ || layers_left_ == 0) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a layer began with no layer left to write"));
  }
  // The layers chain (the layout stores their nodes once).
  if (!SameValues(seeds, nodes())) {
    return Fail(InvalidArgumentError("its " + std::to_string(seeds.size()) + " seeds are not " +
                                     (layer_ == 0 ? "the minibatch's seeds" : "the previous layer's unique nodes") +
                                     " (" + std::to_string(nodes().size()) + ")"));
  }
  // Room for the layer as expected (its indptr, regions, and about as many
  // new unique nodes as edges), so that the segment does not grow chunk by
  // chunk.
  const uint64_t edges = expected_edges;
  Status reserved = bytes_->Reserve(bytes_->size() + 8 * (2 * seeds.size() + (kRegions + 1) * edges) + 64);
  if (!reserved.ok()) return WriteFailed(reserved);
  layer_header_ = bytes_->size();
  // unique nodes, edges and capacity: CloseLayer writes them
  FL_RETURN_IF_ERROR(Extend(3 * sizeof(uint64_t)).status());
  indptr_at_ = bytes_->size();
  FL_ASSIGN_OR_RETURN(char* indptr, Extend((seeds.size() + 1) * sizeof(int64_t)));
  std::memset(indptr, 0, sizeof(int64_t));
  regions_at_ = bytes_->size();
  FL_RETURN_IF_ERROR(Extend(kRegions * edges * sizeof(int64_t)).status());
  capacity_ = edges;
  layer_edges_ = layer_counts_ = 0;
  layer_seeds_ = seeds.size();
  in_layer_ = true;
  return OkStatus();
}

Status MiniBatchWriter::Grow(uint64_t edges) {
  const uint64_t capacity = std::max(edges, 2 * capacity_);
  FL_RETURN_IF_ERROR(Extend(kRegions * (capacity - capacity_) * sizeof(int64_t)).status());
  // The regions are the last bytes so far: move the later ones up, the last
  // first, each with the edges it holds.
  for (size_t region = kRegions - 1; region > 0; --region) {
    std::memmove(bytes_->At(regions_at_ + region * capacity * sizeof(int64_t)),
                 bytes_->At(regions_at_ + region * capacity_ * sizeof(int64_t)), layer_edges_ * sizeof(int64_t));
  }
  capacity_ = capacity;
  return OkStatus();
}

Result<int64_t*> MiniBatchWriter::WriteChunk(const int64_t* counts, uint64_t num_counts, const int64_t* edge_ids,
                                             const int64_t* indices, uint64_t num_edges) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a chunk came after the features"));
  if (!in_layer_) return Fail(FailedPreconditionError("MiniBatchWriter: a chunk came outside a layer"));
  if (num_counts > layer_seeds_ - layer_counts_) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a chunk holds counts past the layer's " +
                                        std::to_string(layer_seeds_) + " seeds"));
  }
  if (layer_edges_ + num_edges > capacity_) FL_RETURN_IF_ERROR(Grow(layer_edges_ + num_edges));
  int64_t* indptr = reinterpret_cast<int64_t*>(bytes_->At(indptr_at_)) + layer_counts_ + 1;
  uint64_t end = layer_edges_;
  for (uint64_t i = 0; i < num_counts; ++i) {
    end += static_cast<uint64_t>(counts[i]);
    indptr[i] = static_cast<int64_t>(end);
  }
  if (end != layer_edges_ + num_edges) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a chunk's counts add up to " +
                                        std::to_string(end - layer_edges_) + " edges; it has " +
                                        std::to_string(num_edges)));
  }
  char* regions = bytes_->At(regions_at_);
  const size_t at = layer_edges_ * sizeof(int64_t), bytes = num_edges * sizeof(int64_t);
  if (bytes > 0) {
    std::memcpy(regions + at, edge_ids, bytes);
    std::memcpy(regions + capacity_ * sizeof(int64_t) + at, indices, bytes);
  }
  layer_edges_ += num_edges;
  layer_counts_ += num_counts;
  // 8-byte aligned: every field before it is 8 bytes.
  return reinterpret_cast<int64_t*>(regions + 2 * capacity_ * sizeof(int64_t) + at);
}

Result<int64_t*> MiniBatchWriter::AddChunk(const SampledChunk& chunk) {
  return WriteChunk(chunk.counts.data(), chunk.counts.size(), chunk.original_edge_ids.begin(), chunk.indices.begin(),
                    static_cast<uint64_t>(chunk.indices.size()));
}

Status MiniBatchWriter::CloseLayer(const std::vector<int64_t>& unique_nodes) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a layer ended after the features"));
  if (!in_layer_) return Fail(FailedPreconditionError("MiniBatchWriter: a layer ended that had not begun"));
  if (layer_counts_ != layer_seeds_) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a layer of " + std::to_string(layer_seeds_) +
                                        " seeds ended with the counts of " + std::to_string(layer_counts_)));
  }
  const std::vector<int64_t>& seeds = nodes();
  if (!StartsWith(unique_nodes, seeds)) {
    return Fail(InvalidArgumentError("its " + std::to_string(unique_nodes.size()) +
                                     " unique nodes do not start with its " + std::to_string(seeds.size()) + " seeds"));
  }
  const uint64_t header[3] = {unique_nodes.size(), layer_edges_, capacity_};
  std::memcpy(bytes_->At(layer_header_), header, sizeof(header));
  in_layer_ = false;
  --layers_left_;
  ++layer_;
  if (halfway_due_) {
    halfway_due_ = false;
    halfway_();
  }
  return OkStatus();
}

Result<const std::vector<int64_t>*> MiniBatchWriter::EndLayer(std::vector<int64_t> unique_nodes) {
  FL_RETURN_IF_ERROR(CloseLayer(unique_nodes));
  // The other vector holds this layer's seeds (the last layer's unique
  // nodes), which the sampler may still read.
  last_unique_ = 1 - last_unique_;
  nodes() = std::move(unique_nodes);
  return &nodes();
}

Status MiniBatchWriter::AddLayer(const SampledLayer& layer) {
  const SampledSubgraph& s = layer.subgraph;
  std::string problem = ShapeProblem(layer);
  if (problem.empty()) problem = IndptrProblem(s.indptr.data(), s.indptr.size(), s.indices.size());
  if (!problem.empty()) return Fail(InvalidArgumentError(problem));
  const uint64_t edges = s.indices.size();
  FL_RETURN_IF_ERROR(BeginLayer(0, s.seeds, edges));
  std::vector<int64_t> counts(s.seeds.size());
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = s.indptr[i + 1] - s.indptr[i];
  FL_ASSIGN_OR_RETURN(int64_t * compacted,
                      WriteChunk(counts.data(), counts.size(), s.original_edge_ids.data(), s.indices.data(), edges));
  if (edges > 0) std::memcpy(compacted, layer.compacted_indices.data(), edges * sizeof(int64_t));
  FL_RETURN_IF_ERROR(CloseLayer(layer.unique_nodes));
  last_unique_ = 1 - last_unique_;  // as EndLayer: the vector it returned last stays as it was
  nodes() = layer.unique_nodes;
  return OkStatus();
}

Result<float*> MiniBatchWriter::Features(int64_t dim, size_t count) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "features came twice"));
  if (in_layer_ || layers_left_ != 0) {
    return Fail(FailedPreconditionError("MiniBatchWriter: features came before the last layer ended"));
  }
  FL_RETURN_IF_ERROR(Array(nodes().data(), nodes().size(), sizeof(int64_t)));
  FL_RETURN_IF_ERROR(U64(static_cast<uint64_t>(dim)));
  FL_RETURN_IF_ERROR(U64(count));
  FL_ASSIGN_OR_RETURN(char* out, Extend(count * sizeof(float)));
  state_ = State::kFeatures;
  return reinterpret_cast<float*>(out);
}

Status MiniBatchWriter::Finish() {
  FL_RETURN_IF_ERROR(Expect(State::kFeatures, "the minibatch ended before its features"));
  bytes_->Finish();
  state_ = State::kNotBegun;
  return OkStatus();
}

const std::vector<int64_t>& MiniBatchWriter::unique_nodes() const { return unique_[last_unique_]; }
std::vector<int64_t>& MiniBatchWriter::nodes() { return unique_[last_unique_]; }

namespace {

// Writes a whole minibatch with `w`.
Status Encode(const MiniBatch& b, MiniBatchWriter& w) {
  // Begin first: a refused minibatch leaves the segment empty (length 0),
  // not holding the last one.
  FL_RETURN_IF_ERROR(w.Begin(b.index, b.seeds, b.layers.size()));
  // Each layer as AddLayer checks it (its sizes, its indptr, how it chains
  // to the one before): a bad minibatch fails here, naming the layer, not in
  // the process that reads it.
  for (size_t k = 0; k < b.layers.size(); ++k) {
    Status added = w.AddLayer(b.layers[k]);
    if (!added.ok()) return added.WithContext("layer " + std::to_string(k));
  }
  FL_ASSIGN_OR_RETURN(float* features, w.Features(b.feature_dim, b.features.size()));
  if (!b.features.empty()) std::memcpy(features, b.features.data(), b.features.size() * sizeof(float));
  return w.Finish();
}

}  // namespace

Result<std::string> EncodeMiniBatch(const MiniBatch& b) {
  std::string out;
  MiniBatchWriter w(out);
  FL_RETURN_IF_ERROR(Encode(b, w));
  return out;
}
Result<MiniBatchView> ViewMiniBatch(std::string_view bytes) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(int64_t) != 0) {
    return InvalidArgumentError("ViewMiniBatch: the bytes do not start 8-byte aligned");
  }
  Reader r(bytes);
  uint64_t magic = 0, index = 0, num_layers = 0, dim = 0;
  FL_RETURN_IF_ERROR(r.U64(&magic));
  if (magic != kMagic) return DataLossError("minibatch bytes do not start with the minibatch magic word");
  MiniBatchView v;
  FL_RETURN_IF_ERROR(r.U64(&index));
  v.index = static_cast<int64_t>(index);
  if (v.index < 0) return Corrupt("index " + std::to_string(v.index) + " is negative");
  uint64_t num_seeds = 0;
  FL_RETURN_IF_ERROR(r.U64(&num_seeds));
  FL_RETURN_IF_ERROR(r.U64(&num_layers));
  if (num_layers > 1024) return DataLossError("minibatch claims " + std::to_string(num_layers) + " layers");
  v.layers.resize(num_layers);
  // How many of the nodes each layer's unique nodes are; its seeds are the
  // layer before's (the minibatch's seeds for layer 0).
  std::vector<uint64_t> unique(num_layers);
  uint64_t seeds = num_seeds;
  for (size_t k = 0; k < v.layers.size(); ++k) {
    Status layer = ViewLayer(r, seeds, v.layers[k], &unique[k]);
    if (!layer.ok()) return layer.WithContext("layer " + std::to_string(k));
    seeds = unique[k];
  }
  FL_ASSIGN_OR_RETURN(ArrayView<int64_t> nodes, r.Array<int64_t>());
  if (nodes.size() != seeds) {
    return Corrupt("the nodes array holds " + std::to_string(nodes.size()) + " nodes; the " +
                   (num_layers == 0 ? "minibatch's seeds are " : "last layer's unique nodes are ") +
                   std::to_string(seeds));
  }
  v.seeds = ArrayView<int64_t>(nodes.data(), num_seeds);
  seeds = num_seeds;
  for (size_t k = 0; k < v.layers.size(); ++k) {
    v.layers[k].seeds = ArrayView<int64_t>(nodes.data(), seeds);
    v.layers[k].unique_nodes = ArrayView<int64_t>(nodes.data(), unique[k]);
    seeds = unique[k];
  }
  FL_RETURN_IF_ERROR(r.U64(&dim));
  v.feature_dim = static_cast<int64_t>(dim);
  FL_ASSIGN_OR_RETURN(v.features, r.Array<float>());
  if (!r.done()) return DataLossError("minibatch bytes have trailing data");
  // The features hold feature_dim values for each unique node of the last layer.
  const uint64_t rows = v.layers.empty() ? 0 : v.layers.back().unique_nodes.size();
  if (v.feature_dim < 0 || (v.feature_dim > 0 && v.features.size() / dim != rows) || v.features.size() != rows * dim) {
    return Corrupt(std::to_string(v.features.size()) + " feature values for " + std::to_string(rows) +
                   " unique nodes of dimension " + std::to_string(v.feature_dim));
  }
  return v;
}

Result<MiniBatch> DecodeMiniBatch(std::string_view bytes) {
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(int64_t) != 0) {
    aligned.resize((bytes.size() + 7) / 8);
    if (!bytes.empty()) std::memcpy(aligned.data(), bytes.data(), bytes.size());
    bytes = std::string_view(reinterpret_cast<const char*>(aligned.data()), bytes.size());
  }
  FL_ASSIGN_OR_RETURN(MiniBatchView view, ViewMiniBatch(bytes));
  return view.ToMiniBatch();
}

Status WriteMiniBatch(const MiniBatch& b, SegmentWriter& segment, const std::function<void()>& halfway) {
  MiniBatchWriter w(segment, halfway);
  return Encode(b, w);
}

Result<MiniBatchView> ReadMiniBatch(SegmentReader& segment) {
  FL_ASSIGN_OR_RETURN(SegmentReader::Message message, segment.Map());
  FL_ASSIGN_OR_RETURN(MiniBatchView view, ViewMiniBatch(message.bytes));
  view.holds = std::move(message.mapping);
  return view;
}

MiniBatchView MiniBatchView::Of(std::shared_ptr<const MiniBatch> b) {
  auto view_of = [](const std::vector<int64_t>& v) { return ArrayView<int64_t>(v.data(), v.size()); };
  MiniBatchView v;
  v.index = b->index;
  v.seeds = view_of(b->seeds);
  for (const SampledLayer& layer : b->layers) {
    const SampledSubgraph& s = layer.subgraph;
    v.layers.push_back(LayerView{view_of(s.seeds), view_of(s.indptr), view_of(s.indices), view_of(s.original_edge_ids),
                                 view_of(layer.unique_nodes), view_of(layer.compacted_indices)});
  }
  v.feature_dim = b->feature_dim;
  v.features = ArrayView<float>(b->features.data(), b->features.size());
  v.features_on_device = b->features_on_device;
  v.holds = std::move(b);
  return v;
}

MiniBatch MiniBatchView::ToMiniBatch() const {
  MiniBatch b;
  b.index = index;
  b.seeds = seeds.ToVector();
  b.layers.resize(layers.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    const LayerView& from = layers[k];
    SampledLayer& to = b.layers[k];
    to.subgraph.seeds = from.seeds.ToVector();
    to.subgraph.indptr = from.indptr.ToVector();
    to.subgraph.indices = from.indices.ToVector();
    to.subgraph.original_edge_ids = from.original_edge_ids.ToVector();
    to.unique_nodes = from.unique_nodes.ToVector();
    to.compacted_indices = from.compacted_indices.ToVector();
  }
  b.feature_dim = feature_dim;
  b.features = features.ToVector();
  b.features_on_device = features_on_device;
  return b;
}

}  // namespace faultline
