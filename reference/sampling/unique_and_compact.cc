// Implements UniqueAndCompact with one hash map from node id to position.
#include "reference/sampling/unique_and_compact.h"

#include <unordered_map>

namespace faultline {

UniqueAndCompactResult UniqueAndCompact(const std::vector<int64_t>& seeds, const std::vector<int64_t>& indices) {
  UniqueAndCompactResult result;
  std::unordered_map<int64_t, int64_t> position;
  position.reserve(seeds.size() + indices.size());
  auto add = [&](int64_t node) {
    auto [it, inserted] = position.emplace(node, static_cast<int64_t>(result.unique_nodes.size()));
    if (inserted) result.unique_nodes.push_back(node);
    return it->second;
  };
  for (int64_t seed : seeds) add(seed);
  result.compacted_indices.reserve(indices.size());
  for (int64_t node : indices) result.compacted_indices.push_back(add(node));
  return result;
}

}  // namespace faultline
