// Implements the minibatch encoding: a magic word, then 8-byte counts and
// count-prefixed arrays in a fixed order (each layer's edges in chunks).
#include "reference/loader/minibatch.h"

#include <cstring>
#include <type_traits>

namespace faultline {
namespace {

constexpr uint64_t kMagic = 0x66617574424d3032ull;  // "fautBM02"

// The layout, in order (u64: 8 bytes; array: a u64 count, then the values):
//   magic, index, seeds array, number of layers;
//   for each layer: seeds array, number of edges, number of chunks; for
//     each chunk: counts array (picks of each of its seeds, in seed order),
//     original_edge_ids, indices and compacted_indices arrays (its edges);
//     then the unique_nodes array;
//   feature_dim, features array (float).

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  Status U64(uint64_t* v) {
    if (in_.size() < sizeof(*v)) return DataLossError("minibatch bytes are truncated");
    std::memcpy(v, in_.data(), sizeof(*v));
    in_.remove_prefix(sizeof(*v));
    return OkStatus();
  }
  // Reads an array's count into *n and returns where its values lie.
  template <typename T>
  Result<const char*> Span(uint64_t* n) {
    static_assert(std::is_trivially_copyable_v<T>);
    FL_RETURN_IF_ERROR(U64(n));
    if (*n > in_.size() / sizeof(T)) return DataLossError("minibatch array length " + std::to_string(*n) + " is past the end");
    const char* values = in_.data();
    in_.remove_prefix(*n * sizeof(T));
    return values;
  }
  template <typename T>
  Status Array(std::vector<T>* v) {
    uint64_t n = 0;
    FL_ASSIGN_OR_RETURN(const char* values, Span<T>(&n));
    v->clear();
    Append(v, values, n);
    return OkStatus();
  }
  // Appends an array of exactly `n` values to *v.
  template <typename T>
  Status AppendArray(std::vector<T>* v, uint64_t n, const char* what) {
    uint64_t count = 0;
    FL_ASSIGN_OR_RETURN(const char* values, Span<T>(&count));
    if (count != n) {
      return DataLossError("minibatch bytes are corrupt: a chunk has " + std::to_string(count) + " " + what +
                           " for " + std::to_string(n) + " edges");
    }
    Append(v, values, n);
    return OkStatus();
  }
  size_t left() const { return in_.size(); }
  bool done() const { return in_.empty(); }

 private:
  // Appends n values that lie at `values` to *v: one copy (resize would
  // zero the memory first), by memcpy when they are not aligned.
  template <typename T>
  static void Append(std::vector<T>* v, const char* values, uint64_t n) {
    if (reinterpret_cast<uintptr_t>(values) % alignof(T) == 0) {
      const T* first = reinterpret_cast<const T*>(values);
      v->insert(v->end(), first, first + n);
    } else {
      const size_t size = v->size();
      v->resize(size + n);
      if (n > 0) std::memcpy(v->data() + size, values, n * sizeof(T));  // an empty vector's data() may be null
    }
  }

  std::string_view in_;
};

// Checks what every consumer of a decoded minibatch relies on, beyond the
// indptr ReadChunks built (it covers each layer's seeds and edges), so that
// a corrupt segment is an error here rather than an out-of-range index
// later: every compacted index points into unique_nodes, and the features
// hold feature_dim values for each unique node of the last layer.
Status CheckConsistent(const MiniBatch& b) {
  auto corrupt = [](const std::string& what) { return DataLossError("minibatch bytes are corrupt: " + what); };
  if (b.index < 0) return corrupt("index " + std::to_string(b.index) + " is negative");
  for (size_t k = 0; k < b.layers.size(); ++k) {
    const std::vector<int64_t>& compacted = b.layers[k].compacted_indices;
    const uint64_t unique = b.layers[k].unique_nodes.size();
    bool outside = false;  // one pass without an early exit, which the compiler vectorizes
    for (int64_t c : compacted) outside |= static_cast<uint64_t>(c) >= unique;  // a negative c is huge here
    if (!outside) continue;
    for (int64_t c : compacted) {
      if (static_cast<uint64_t>(c) >= unique) {
        return corrupt("layer " + std::to_string(k) + ": compacted index " + std::to_string(c) + " is outside the " +
                       std::to_string(unique) + " unique nodes");
      }
    }
  }
  const uint64_t rows = b.layers.empty() ? 0 : b.layers.back().unique_nodes.size();
  if (b.feature_dim < 0 || (b.feature_dim > 0 && b.features.size() / static_cast<uint64_t>(b.feature_dim) != rows) ||
      b.features.size() != rows * static_cast<uint64_t>(b.feature_dim)) {
    return corrupt(std::to_string(b.features.size()) + " feature values for " + std::to_string(rows) +
                   " unique nodes of dimension " + std::to_string(b.feature_dim));
  }
  return OkStatus();
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
  FL_RETURN_IF_ERROR(Array(seeds.data(), seeds.size(), sizeof(int64_t)));
  FL_RETURN_IF_ERROR(U64(num_layers));
  state_ = State::kLayers;
  return OkStatus();
}

Status MiniBatchWriter::BeginLayer(uint32_t, const std::vector<int64_t>& seeds, size_t expected_edges) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a layer began after the features"));
  if (in_layer_ || layers_left_ == 0) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a layer began with no layer left to write"));
  }
  // Room for the layer as expected (about 32 bytes per seed and per edge,
  // the unique nodes included), so that it does not grow the segment chunk
  // by chunk.
  Status reserved = bytes_->Reserve(bytes_->size() + 32 * (seeds.size() + expected_edges) + 64);
  if (!reserved.ok()) return WriteFailed(reserved);
  FL_RETURN_IF_ERROR(Array(seeds.data(), seeds.size(), sizeof(int64_t)));
  layer_header_ = bytes_->size();
  FL_RETURN_IF_ERROR(Extend(2 * sizeof(uint64_t)).status());  // filled in by CloseLayer
  layer_edges_ = layer_chunks_ = layer_counts_ = 0;
  layer_seeds_ = seeds.size();
  in_layer_ = true;
  return OkStatus();
}

Status MiniBatchWriter::WriteChunk(const int64_t* counts, uint64_t num_counts, const int64_t* edge_ids,
                                   const int64_t* indices, uint64_t num_edges) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a chunk came after the features"));
  if (!in_layer_) return Fail(FailedPreconditionError("MiniBatchWriter: a chunk came outside a layer"));
  FL_RETURN_IF_ERROR(Array(counts, num_counts, sizeof(int64_t)));
  FL_RETURN_IF_ERROR(Array(edge_ids, num_edges, sizeof(int64_t)));
  FL_RETURN_IF_ERROR(Array(indices, num_edges, sizeof(int64_t)));
  FL_RETURN_IF_ERROR(U64(num_edges));  // the compacted indices' count; the caller writes them
  layer_edges_ += num_edges;
  layer_counts_ += num_counts;
  ++layer_chunks_;
  return OkStatus();
}

Result<int64_t*> MiniBatchWriter::AddChunk(const SampledChunk& chunk) {
  const uint64_t edges = static_cast<uint64_t>(chunk.indices.size());
  FL_RETURN_IF_ERROR(WriteChunk(chunk.counts.data(), chunk.counts.size(), chunk.original_edge_ids.begin(),
                                chunk.indices.begin(), edges));
  FL_ASSIGN_OR_RETURN(char* compacted, Extend(edges * sizeof(int64_t)));
  return reinterpret_cast<int64_t*>(compacted);  // 8-byte aligned: every field before it is 8 bytes
}

Status MiniBatchWriter::CloseLayer(const std::vector<int64_t>& unique_nodes) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "a layer ended after the features"));
  if (!in_layer_) return Fail(FailedPreconditionError("MiniBatchWriter: a layer ended that had not begun"));
  if (layer_counts_ != layer_seeds_) {
    return Fail(FailedPreconditionError("MiniBatchWriter: a layer of " + std::to_string(layer_seeds_) +
                                        " seeds ended with the counts of " + std::to_string(layer_counts_)));
  }
  const uint64_t header[2] = {layer_edges_, layer_chunks_};
  std::memcpy(bytes_->At(layer_header_), header, sizeof(header));
  FL_RETURN_IF_ERROR(Array(unique_nodes.data(), unique_nodes.size(), sizeof(int64_t)));
  in_layer_ = false;
  --layers_left_;
  if (halfway_due_) {
    halfway_due_ = false;
    halfway_();
  }
  return OkStatus();
}

Result<const std::vector<int64_t>*> MiniBatchWriter::EndLayer(std::vector<int64_t> unique_nodes) {
  FL_RETURN_IF_ERROR(CloseLayer(unique_nodes));
  // The other slot holds this layer's seeds (the last layer's unique nodes).
  last_unique_ = 1 - last_unique_;
  unique_[last_unique_] = std::move(unique_nodes);
  return &unique_[last_unique_];
}

Status MiniBatchWriter::AddLayer(const SampledLayer& layer) {
  const SampledSubgraph& s = layer.subgraph;
  if (s.indptr.size() != s.seeds.size() + 1 || s.original_edge_ids.size() != s.indices.size() ||
      layer.compacted_indices.size() != s.indices.size()) {
    return Fail(InvalidArgumentError("a layer of " + std::to_string(s.seeds.size()) + " seeds has " +
                                     std::to_string(s.indptr.size()) + " indptr entries, " +
                                     std::to_string(s.indices.size()) + " indices, " +
                                     std::to_string(s.original_edge_ids.size()) + " edge ids and " +
                                     std::to_string(layer.compacted_indices.size()) + " compacted indices"));
  }
  const uint64_t edges = s.indices.size();
  FL_RETURN_IF_ERROR(BeginLayer(0, s.seeds, edges));
  std::vector<int64_t> counts(s.seeds.size());
  for (size_t i = 0; i < counts.size(); ++i) counts[i] = s.indptr[i + 1] - s.indptr[i];
  FL_RETURN_IF_ERROR(WriteChunk(counts.data(), counts.size(), s.original_edge_ids.data(), s.indices.data(), edges));
  FL_ASSIGN_OR_RETURN(char* compacted, Extend(edges * sizeof(int64_t)));
  if (edges > 0) std::memcpy(compacted, layer.compacted_indices.data(), edges * sizeof(int64_t));
  return CloseLayer(layer.unique_nodes);
}

Result<float*> MiniBatchWriter::Features(int64_t dim, size_t count) {
  FL_RETURN_IF_ERROR(Expect(State::kLayers, "features came twice"));
  if (in_layer_ || layers_left_ != 0) {
    return Fail(FailedPreconditionError("MiniBatchWriter: features came before the last layer ended"));
  }
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

namespace {

// Writes a whole minibatch with `w`.
Status Encode(const MiniBatch& b, MiniBatchWriter& w) {
  FL_RETURN_IF_ERROR(w.Begin(b.index, b.seeds, b.layers.size()));
  for (const SampledLayer& layer : b.layers) FL_RETURN_IF_ERROR(w.AddLayer(layer));
  FL_ASSIGN_OR_RETURN(float* features, w.Features(b.feature_dim, b.features.size()));
  if (!b.features.empty()) std::memcpy(features, b.features.data(), b.features.size() * sizeof(float));
  return w.Finish();
}

// Reads a layer's chunks into `l`, whose seeds are read. The arrays are
// reserved once and each chunk appended (no zero-fill before the copy).
Status ReadChunks(Reader& r, SampledLayer& l) {
  auto corrupt = [](const std::string& what) { return DataLossError("minibatch bytes are corrupt: " + what); };
  uint64_t edges = 0, chunks = 0;
  FL_RETURN_IF_ERROR(r.U64(&edges));
  FL_RETURN_IF_ERROR(r.U64(&chunks));
  // Each edge takes 24 bytes and each chunk 32: larger claims are corrupt
  // (and must not size the vectors).
  if (edges > r.left() / 24 || chunks > r.left() / 32) {
    return corrupt("a layer claims " + std::to_string(edges) + " edges in " + std::to_string(chunks) +
                   " chunks but " + std::to_string(r.left()) + " bytes are left");
  }
  SampledSubgraph& s = l.subgraph;
  const uint64_t num_seeds = s.seeds.size();
  s.indptr.resize(num_seeds + 1);
  s.indptr[0] = 0;
  s.indices.reserve(edges);
  s.original_edge_ids.reserve(edges);
  l.compacted_indices.reserve(edges);
  uint64_t seeds_read = 0, at = 0;  // so far
  for (uint64_t c = 0; c < chunks; ++c) {
    uint64_t n = 0;
    FL_ASSIGN_OR_RETURN(const char* counts, r.Span<int64_t>(&n));
    if (n > num_seeds - seeds_read) {
      return corrupt("the chunks hold counts for more than the layer's " + std::to_string(num_seeds) + " seeds");
    }
    // Prefix sums of the counts; a count is at most the edges left, so the
    // sums cannot overflow.
    int64_t* indptr = s.indptr.data() + seeds_read + 1;
    uint64_t end = at;
    for (uint64_t i = 0; i < n; ++i) {
      int64_t count = 0;
      std::memcpy(&count, counts + i * sizeof(int64_t), sizeof(count));
      if (static_cast<uint64_t>(count) > edges - end) {  // a negative count is huge here
        return corrupt("a seed's count " + std::to_string(count) + " is negative or past the layer's " +
                       std::to_string(edges) + " edges");
      }
      end += static_cast<uint64_t>(count);
      indptr[i] = static_cast<int64_t>(end);
    }
    seeds_read += n;
    FL_RETURN_IF_ERROR(r.AppendArray(&s.original_edge_ids, end - at, "edge ids"));
    FL_RETURN_IF_ERROR(r.AppendArray(&s.indices, end - at, "indices"));
    FL_RETURN_IF_ERROR(r.AppendArray(&l.compacted_indices, end - at, "compacted indices"));
    at = end;
  }
  if (seeds_read != num_seeds || at != edges) {
    return corrupt("a layer's chunks hold " + std::to_string(seeds_read) + " seeds and " + std::to_string(at) +
                   " edges; the layer has " + std::to_string(num_seeds) + " seeds and " + std::to_string(edges) +
                   " edges");
  }
  return OkStatus();
}

}  // namespace

Result<std::string> EncodeMiniBatch(const MiniBatch& b) {
  std::string out;
  MiniBatchWriter w(out);
  FL_RETURN_IF_ERROR(Encode(b, w));
  return out;
}
Result<MiniBatch> DecodeMiniBatch(std::string_view bytes) {
  Reader r(bytes);
  uint64_t magic = 0, index = 0, num_layers = 0, dim = 0;
  FL_RETURN_IF_ERROR(r.U64(&magic));
  if (magic != kMagic) return DataLossError("minibatch bytes do not start with the minibatch magic word");
  MiniBatch b;
  FL_RETURN_IF_ERROR(r.U64(&index));
  b.index = static_cast<int64_t>(index);
  FL_RETURN_IF_ERROR(r.Array(&b.seeds));
  FL_RETURN_IF_ERROR(r.U64(&num_layers));
  if (num_layers > 1024) return DataLossError("minibatch claims " + std::to_string(num_layers) + " layers");
  b.layers.resize(num_layers);
  for (SampledLayer& l : b.layers) {
    FL_RETURN_IF_ERROR(r.Array(&l.subgraph.seeds));
    FL_RETURN_IF_ERROR(ReadChunks(r, l));
    FL_RETURN_IF_ERROR(r.Array(&l.unique_nodes));
  }
  FL_RETURN_IF_ERROR(r.U64(&dim));
  b.feature_dim = static_cast<int64_t>(dim);
  FL_RETURN_IF_ERROR(r.Array(&b.features));
  if (!r.done()) return DataLossError("minibatch bytes have trailing data");
  FL_RETURN_IF_ERROR(CheckConsistent(b));
  return b;
}

Status WriteMiniBatch(const MiniBatch& b, SegmentWriter& segment, const std::function<void()>& halfway) {
  MiniBatchWriter w(segment, halfway);
  return Encode(b, w);
}

Result<MiniBatch> ReadMiniBatch(SegmentReader& segment) {
  Result<MiniBatch> decoded = InternalError("unset");
  FL_RETURN_IF_ERROR(segment.Read([&](std::string_view bytes) {
    decoded = DecodeMiniBatch(bytes);
    return OkStatus();
  }));
  return decoded;
}

}  // namespace faultline
