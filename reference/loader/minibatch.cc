// Implements the minibatch encoding: a magic word, then length-prefixed
// arrays in a fixed order.
#include "reference/loader/minibatch.h"

#include <cstring>
#include <type_traits>

namespace faultline {
namespace {

constexpr uint64_t kMagic = 0x66617574424d3031ull;  // "faultBM01"

// Writes the encoding in two passes over the same code: the first (no
// buffer) only counts bytes, so the second fills a buffer of the exact size
// (a minibatch is tens of MB: no regrowth, no second copy). `halfway`, when
// set, runs once when the byte at `halfway_at` is about to be written.
class Writer {
 public:
  explicit Writer(char* out, size_t halfway_at = 0, const std::function<void()>* halfway = nullptr)
      : out_(out), halfway_at_(halfway_at), halfway_(halfway != nullptr && *halfway ? halfway : nullptr) {}
  void U64(uint64_t v) { Put(&v, sizeof(v)); }
  template <typename T>
  void Array(const std::vector<T>& v) {
    U64(v.size());
    Put(v.data(), v.size() * sizeof(T));
  }
  size_t size() const { return size_; }

 private:
  void Put(const void* data, size_t bytes) {
    if (out_ != nullptr && bytes > 0) {
      size_t first = bytes;
      if (halfway_ != nullptr && size_ <= halfway_at_ && halfway_at_ < size_ + bytes) first = halfway_at_ - size_;
      std::memcpy(out_ + size_, data, first);
      if (first < bytes) {
        (*halfway_)();
        halfway_ = nullptr;
        std::memcpy(out_ + size_ + first, static_cast<const char*>(data) + first, bytes - first);
      }
    }
    size_ += bytes;
  }
  char* out_;
  size_t halfway_at_;
  const std::function<void()>* halfway_;
  size_t size_ = 0;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  Status U64(uint64_t* v) {
    if (in_.size() < sizeof(*v)) return DataLossError("minibatch bytes are truncated");
    std::memcpy(v, in_.data(), sizeof(*v));
    in_.remove_prefix(sizeof(*v));
    return OkStatus();
  }
  template <typename T>
  Status Array(std::vector<T>* v) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint64_t n = 0;
    FL_RETURN_IF_ERROR(U64(&n));
    if (n > in_.size() / sizeof(T)) return DataLossError("minibatch array length " + std::to_string(n) + " is past the end");
    if (reinterpret_cast<uintptr_t>(in_.data()) % alignof(T) == 0) {
      const T* first = reinterpret_cast<const T*>(in_.data());
      v->assign(first, first + n);  // one copy; resize would zero the memory first
    } else {
      v->resize(n);
      if (n > 0) std::memcpy(v->data(), in_.data(), n * sizeof(T));  // an empty vector's data() may be null
    }
    in_.remove_prefix(n * sizeof(T));
    return OkStatus();
  }
  bool done() const { return in_.empty(); }

 private:
  std::string_view in_;
};

// Checks what every consumer of a decoded minibatch relies on, so that a
// corrupt segment is an error here rather than an out-of-range index later:
// each layer's indptr covers its seeds and indices, every compacted index
// points into unique_nodes, and the features hold feature_dim values for
// each unique node of the last layer.
Status CheckConsistent(const MiniBatch& b) {
  auto corrupt = [](const std::string& what) { return DataLossError("minibatch bytes are corrupt: " + what); };
  if (b.index < 0) return corrupt("index " + std::to_string(b.index) + " is negative");
  for (size_t k = 0; k < b.layers.size(); ++k) {
    const SampledSubgraph& s = b.layers[k].subgraph;
    const std::string layer = "layer " + std::to_string(k) + ": ";
    if (s.indptr.size() != s.seeds.size() + 1) {
      return corrupt(layer + "indptr has " + std::to_string(s.indptr.size()) + " entries for " +
                     std::to_string(s.seeds.size()) + " seeds");
    }
    if (s.indptr.front() != 0) return corrupt(layer + "indptr[0] is " + std::to_string(s.indptr.front()));
    for (size_t i = 0; i + 1 < s.indptr.size(); ++i) {
      if (s.indptr[i] > s.indptr[i + 1]) return corrupt(layer + "indptr decreases at " + std::to_string(i));
    }
    if (s.indptr.back() != static_cast<int64_t>(s.indices.size()) || s.original_edge_ids.size() != s.indices.size() ||
        b.layers[k].compacted_indices.size() != s.indices.size()) {
      return corrupt(layer + "indptr ends at " + std::to_string(s.indptr.back()) + " but there are " +
                     std::to_string(s.indices.size()) + " indices, " + std::to_string(s.original_edge_ids.size()) +
                     " edge ids and " + std::to_string(b.layers[k].compacted_indices.size()) + " compacted indices");
    }
    const int64_t unique = static_cast<int64_t>(b.layers[k].unique_nodes.size());
    for (int64_t c : b.layers[k].compacted_indices) {
      if (c < 0 || c >= unique) {
        return corrupt(layer + "compacted index " + std::to_string(c) + " is outside the " + std::to_string(unique) +
                       " unique nodes");
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

namespace {

void Encode(const MiniBatch& b, Writer& w) {
  w.U64(kMagic);
  w.U64(static_cast<uint64_t>(b.index));
  w.Array(b.seeds);
  w.U64(b.layers.size());
  for (const SampledLayer& l : b.layers) {
    w.Array(l.subgraph.seeds);
    w.Array(l.subgraph.indptr);
    w.Array(l.subgraph.indices);
    w.Array(l.subgraph.original_edge_ids);
    w.Array(l.unique_nodes);
    w.Array(l.compacted_indices);
  }
  w.U64(static_cast<uint64_t>(b.feature_dim));
  w.Array(b.features);
}

}  // namespace

std::string EncodeMiniBatch(const MiniBatch& b) {
  Writer counter(nullptr);
  Encode(b, counter);
  std::string out(counter.size(), '\0');
  Writer w(out.data());
  Encode(b, w);
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
    FL_RETURN_IF_ERROR(r.Array(&l.subgraph.indptr));
    FL_RETURN_IF_ERROR(r.Array(&l.subgraph.indices));
    FL_RETURN_IF_ERROR(r.Array(&l.subgraph.original_edge_ids));
    FL_RETURN_IF_ERROR(r.Array(&l.unique_nodes));
    FL_RETURN_IF_ERROR(r.Array(&l.compacted_indices));
  }
  FL_RETURN_IF_ERROR(r.U64(&dim));
  b.feature_dim = static_cast<int64_t>(dim);
  FL_RETURN_IF_ERROR(r.Array(&b.features));
  if (!r.done()) return DataLossError("minibatch bytes have trailing data");
  FL_RETURN_IF_ERROR(CheckConsistent(b));
  return b;
}

Status WriteMiniBatch(const MiniBatch& b, SegmentWriter& segment, const std::function<void()>& halfway) {
  Writer counter(nullptr);
  Encode(b, counter);
  const size_t size = counter.size();
  return segment.WriteInPlace(size, [&](char* out) {
    Writer w(out, size / 2, &halfway);
    Encode(b, w);
  });
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
