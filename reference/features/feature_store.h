// Provides index_select of feature rows (on the host, from device memory, or
// from pinned host memory read by the device) and FeatureStore, a named set
// of feature tables.
#ifndef FAULTLINE_REFERENCE_FEATURES_FEATURE_STORE_H_
#define FAULTLINE_REFERENCE_FEATURES_FEATURE_STORE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "kernels/id_check.h"
#include "reference/base/status.h"
#include "reference/tensor/tensor.h"

namespace faultline {

// Returns table[ids, :] for a 2-D float32 `table` and 1-D int64 `ids`:
// - host table, host ids: gathered on the host;
// - device table, ids on the same device: gathered by a kernel;
// - pinned host table, device ids: gathered by a kernel reading the pinned
//   rows through unified addressing (GraphBolt's UVA index_select).
// The result lives where the ids live. Every id is checked first; an id
// outside [0, rows) is an error naming its position and value.
Result<Tensor> IndexSelect(const Tensor& table, const Tensor& ids);

// The words of a device gather's id check (kernels::IdCheckWords), kept
// from call to call so that IndexSelectInto allocates nothing: a word of
// device memory and a pinned host word, on the device and runtime of their
// first use until it is destroyed. One call at a time may use it.
class GatherScratch {
 public:
  GatherScratch() = default;
  // A copy would share the words (tensors share their storage).
  GatherScratch(const GatherScratch&) = delete;
  GatherScratch& operator=(const GatherScratch&) = delete;
  GatherScratch(GatherScratch&&) = default;
  GatherScratch& operator=(GatherScratch&&) = default;

  // Returns the words for ids on `device` of `runtime`, allocated on first
  // use; words held on another device or runtime are an InvalidArgument
  // error naming both.
  Result<kernels::IdCheckWords> Words(DeviceRuntime& runtime, Device device);

  // The verdict of the gather QueueIndexSelectInto queued with this
  // scratch: OK once its rows are in `out` and every id was in range, or
  // the OutOfRange error IndexSelectInto gives for the first bad id (`out`
  // then untouched). It waits for the gather only if the host has not
  // waited for the stream since (an event recorded after it says). A
  // FailedPrecondition error when no queued gather awaits its verdict.
  Status Verdict();

 private:
  friend Status QueueIndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch& scratch);
  // Destroys the scratch's event with the runtime that made it.
  struct EventDestroyer {
    DeviceRuntime* runtime;  // no initializer: unique_ptr value-initializes it, to null
    void operator()(void* event) const;
  };
  // A queued gather awaiting its verdict: its ids (the caller keeps them)
  // and the table's rows.
  struct Queued {
    DeviceRuntime* runtime;
    const int64_t* ids;
    int64_t n, rows;
  };
  Tensor device_word_, host_word_;
  std::unique_ptr<void, EventDestroyer> landed_;  // recorded after the verdict's copy
  std::optional<Queued> queued_;
};

// The same into `out`, a float32 tensor of shape [ids.numel(), table's
// columns] where the ids live. For callers that gather every step into one
// buffer: on a GPU, allocating a large result costs more than the gather
// itself (docs/benchmarks.md, "GPU"). `out` must not share memory with the
// table (InvalidArgument "IndexSelectInto: out shares memory with the
// table; expected a separate buffer"). Nothing is written to `out` when an
// argument or an id is bad.
// From device ids, the check and the gather are queued together and the
// host waits once, for both: the rows are in `out` when it returns. With a
// `scratch`, the check's words are the scratch's and the call allocates no
// device memory; without, it allocates and frees one word.
Status IndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch* scratch = nullptr);

// IndexSelectInto from device ids, queued in the default stream of their
// device with no wait: the id check, the gather (which writes nothing if an
// id is bad) and the verdict's copy to the scratch's pinned word. The rows
// land when the host next waits for the stream (for another read, say);
// scratch.Verdict() then says whether every id was in range. Until then the
// caller keeps `ids` and `out`, and the scratch takes no other gather
// (FailedPrecondition). The arguments are checked as IndexSelectInto checks
// them; host ids are an InvalidArgument error (IndexSelectInto gathers them
// at once). Allocates nothing once the scratch holds its words and event.
Status QueueIndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out, GatherScratch& scratch);

class FeatureStore {
 public:
  // Adds a 2-D float32 table under a new name.
  Status Add(const std::string& name, Tensor table);
  // Returns the table called `name`.
  Result<const Tensor*> Get(const std::string& name) const;
  // Gathers rows `ids` of the table called `name` (see IndexSelect).
  Result<Tensor> IndexSelect(const std::string& name, const Tensor& ids) const;

 private:
  std::map<std::string, Tensor> tables_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_FEATURES_FEATURE_STORE_H_
