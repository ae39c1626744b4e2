// Fuzzes minibatch decoding from shared memory, the parent's side of a
// worker's result (reference/loader/minibatch.h, shared_memory.h). Feeds:
// the input as the bytes of a worker's shared-memory segment: decoded with
// DecodeMiniBatch from the fuzzer's buffer (exact size, so ASan sees any
// read past the end), then written into one shared-memory segment that the
// whole run reuses (SegmentWriter, growing as inputs do) and decoded where it
// lies (SegmentReader), as DataLoader::Accept does (a memfd from
// CreateUnlinkedSegment, as its slots are). Asserts: the segment gives back
// exactly this input (not a longer earlier one); both decodes agree;
// decoding never crashes and either fails with DataLoss or returns
// a consistent minibatch (each layer's indptr covers its seeds and indices,
// every compacted index points into unique_nodes, the layers chain (layer
// 0's seeds are the minibatch's, each later layer's the unique nodes of the
// one before, unique nodes start with the seeds; since faultBM04 the decoder
// builds them so, and the check guards that construction), the features hold
// feature_dim values per unique node of the last layer) that encodes,
// decodes and encodes again to the same bytes, in memory and in a segment.
#include <unistd.h>

#include <algorithm>
#include <string>

#include "properties/fuzz/fuzz_support.h"
#include "reference/loader/minibatch.h"
#include "reference/loader/shared_memory.h"

namespace faultline {
namespace {

void CheckConsistent(const MiniBatch& b) {
  FUZZ_CHECK(b.index >= 0, "negative index " + std::to_string(b.index));
  for (size_t k = 0; k < b.layers.size(); ++k) {
    const SampledLayer& l = b.layers[k];
    const std::string layer = "layer " + std::to_string(k) + ": ";
    FUZZ_CHECK(l.subgraph.indptr.size() == l.subgraph.seeds.size() + 1, layer + "indptr size");
    FUZZ_CHECK(l.subgraph.indptr.front() == 0, layer + "indptr[0]");
    for (size_t i = 0; i + 1 < l.subgraph.indptr.size(); ++i) {
      FUZZ_CHECK(l.subgraph.indptr[i] <= l.subgraph.indptr[i + 1], layer + "indptr not monotone");
    }
    FUZZ_CHECK(l.subgraph.indptr.back() == static_cast<int64_t>(l.subgraph.indices.size()), layer + "indptr end");
    FUZZ_CHECK(l.subgraph.original_edge_ids.size() == l.subgraph.indices.size(), layer + "edge ids size");
    FUZZ_CHECK(l.compacted_indices.size() == l.subgraph.indices.size(), layer + "compacted size");
    for (int64_t c : l.compacted_indices) {
      FUZZ_CHECK(c >= 0 && c < static_cast<int64_t>(l.unique_nodes.size()), layer + "compacted index out of range");
    }
    // The layers chain, so that a consumer can carry rows from one to the next.
    FUZZ_CHECK(l.subgraph.seeds == (k == 0 ? b.seeds : b.layers[k - 1].unique_nodes), layer + "seeds do not chain");
    FUZZ_CHECK(l.unique_nodes.size() >= l.subgraph.seeds.size() &&
                   std::equal(l.subgraph.seeds.begin(), l.subgraph.seeds.end(), l.unique_nodes.begin()),
               layer + "unique nodes do not start with the seeds");
  }
  FUZZ_CHECK(b.feature_dim >= 0, "negative feature_dim");
  const uint64_t rows = b.layers.empty() ? 0 : b.layers.back().unique_nodes.size();
  FUZZ_CHECK(b.feature_dim == 0 || b.features.size() / static_cast<uint64_t>(b.feature_dim) == rows,
             "features do not hold feature_dim values per unique node");
  FUZZ_CHECK(b.features.size() == rows * static_cast<uint64_t>(b.feature_dim), "features size");
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  // The writer and the reader each hold a descriptor of their own, as a
  // worker and the main process do.
  static const std::string segment = "/faultline-fuzz-minibatch";
  static const int fd = [] {
    Result<int> created = CreateUnlinkedSegment(segment);
    FUZZ_CHECK(created.ok(), created.status().ToString());
    return *created;
  }();
  static SegmentWriter writer(segment, fd);
  static SegmentReader reader(segment, dup(fd));
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  Result<MiniBatch> batch = DecodeMiniBatch(bytes);

  Status written = writer.Write(bytes);
  FUZZ_CHECK(written.ok(), written.ToString());
  Result<MiniBatch> from_segment = InternalError("unset");
  Status read = reader.Read([&](std::string_view mapped) {
    FUZZ_CHECK(mapped == bytes, "the segment did not come back byte for byte");
    from_segment = DecodeMiniBatch(mapped);
    return OkStatus();
  });
  FUZZ_CHECK(read.ok(), read.ToString());
  FUZZ_CHECK(from_segment.ok() == batch.ok(), "the two decodes disagree: " + from_segment.status().ToString());

  if (!batch.ok()) {
    FUZZ_CHECK(batch.status().code() == StatusCode::kDataLoss, batch.status().ToString());
    FUZZ_CHECK(from_segment.status().message() == batch.status().message(), from_segment.status().ToString());
    return 0;
  }
  CheckConsistent(*batch);
  // Compared as bytes: features may hold NaNs, which operator== calls
  // unequal. The input may leave room past a layer's edges, which
  // EncodeMiniBatch does not: the encoding must decode to the same
  // minibatch, and encode again to itself.
  Result<std::string> encoded = EncodeMiniBatch(*batch);
  FUZZ_CHECK(encoded.ok(), encoded.status().ToString());
  FUZZ_CHECK(*EncodeMiniBatch(*from_segment) == *encoded, "the two decodes disagree");
  Result<MiniBatch> again = DecodeMiniBatch(*encoded);
  FUZZ_CHECK(again.ok(), again.status().ToString());
  FUZZ_CHECK(*EncodeMiniBatch(*again) == *encoded, "decode, encode, decode changed the minibatch");
  // A worker that samples on a device: the whole minibatch encoded into
  // the segment, then read back.
  written = WriteMiniBatch(*batch, writer);
  FUZZ_CHECK(written.ok(), written.ToString());
  read = reader.Read([&](std::string_view mapped) {
    FUZZ_CHECK(mapped == *encoded, "encoding in place gave other bytes than EncodeMiniBatch");
    return OkStatus();
  });
  FUZZ_CHECK(read.ok(), read.ToString());
  return 0;
}
