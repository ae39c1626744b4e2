// Provides index_select of feature rows (on the host, from device memory, or
// from pinned host memory read by the device) and FeatureStore, a named set
// of feature tables.
#ifndef FAULTLINE_REFERENCE_FEATURES_FEATURE_STORE_H_
#define FAULTLINE_REFERENCE_FEATURES_FEATURE_STORE_H_

#include <map>
#include <string>

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
// The same into `out`, a float32 tensor of shape [ids.numel(), table's
// columns] where the ids live. For callers that gather every step into one
// buffer: on a GPU, allocating a large result costs more than the gather
// itself (docs/benchmarks.md, "GPU"). `out` must not share memory with the
// table (InvalidArgument "IndexSelectInto: out shares memory with the
// table; expected a separate buffer"). Nothing is written to `out` when an
// argument or an id is bad.
Status IndexSelectInto(const Tensor& table, const Tensor& ids, Tensor& out);

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
