// Implements CscGraph validation and its .npy folder format.
#include "reference/graph/csc_graph.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>
#include <thread>

#include "kernels/weight_table.h"
#include "reference/base/huge_pages.h"

namespace faultline {
namespace {

std::string FloatText(float value) {
  std::ostringstream os;
  os.precision(9);
  os << value;
  return os.str();
}

std::string Num(int64_t value) { return std::to_string(value); }

// Returns whether an optional file of the graph is there. lstat, not stat:
// a dangling symbolic link is an error, not "no weights"; so is every
// failure but ENOENT (a folder that cannot be searched, ...).
Result<bool> OptionalFileExists(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return InvalidArgumentError("cannot check whether '" + path + "' exists: " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode) && stat(path.c_str(), &st) != 0) {
    const int error = errno;
    char target[4096];
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    const std::string to = n >= 0 ? "'" + std::string(target, n) + "'" : "an unreadable target";
    return NotFoundError("'" + path + "' is a symbolic link to " + to + ", which cannot be opened: " +
                         std::strerror(error) + "; expected the .npy file, or no file for a graph without it");
  }
  return true;
}

Status ValidateIndptr(const std::vector<int64_t>& indptr, int64_t num_edges) {
  if (indptr.empty()) return InvalidArgumentError("indptr is empty; expected num_nodes + 1 >= 1 entries");
  if (indptr[0] != 0) return InvalidArgumentError("indptr[0]=" + Num(indptr[0]) + "; expected 0");
  for (size_t i = 0; i + 1 < indptr.size(); ++i) {
    if (indptr[i] > indptr[i + 1]) {
      return InvalidArgumentError("indptr is not monotone: indptr[" + Num(i) + "]=" + Num(indptr[i]) + " > indptr[" +
                                  Num(i + 1) + "]=" + Num(indptr[i + 1]));
    }
  }
  const size_t last = indptr.size() - 1;
  if (indptr[last] != num_edges) {
    return InvalidArgumentError("indptr[" + Num(last) + "]=" + Num(indptr[last]) +
                                " (the last entry) does not match the number of edges: indices has " + Num(num_edges) +
                                " entries");
  }
  return OkStatus();
}

Status ValidateIndices(const std::vector<int64_t>& indices, int64_t num_nodes) {
  for (size_t e = 0; e < indices.size(); ++e) {
    if (indices[e] < 0 || indices[e] >= num_nodes) {
      return InvalidArgumentError("indices[" + Num(e) + "]=" + Num(indices[e]) + " is out of range [0, " +
                                  Num(num_nodes) + ")");
    }
  }
  return OkStatus();
}

Status ValidateWeights(const std::vector<float>& weights, int64_t num_edges) {
  if (static_cast<int64_t>(weights.size()) != num_edges) {
    return InvalidArgumentError("weights has " + Num(weights.size()) + " entries; expected one per edge (" +
                                Num(num_edges) + ")");
  }
  for (size_t e = 0; e < weights.size(); ++e) {
    if (!std::isfinite(weights[e])) {
      return InvalidArgumentError("weights[" + Num(e) + "]=" + FloatText(weights[e]) +
                                  " is not finite; expected a finite value >= 0");
    }
    if (weights[e] < 0) {
      return InvalidArgumentError("weights[" + Num(e) + "]=" + FloatText(weights[e]) +
                                  " is negative; expected a finite value >= 0");
    }
    // A CPU in flush-to-zero mode (-ffast-math code, torch.set_flush_denormal)
    // reads a subnormal as 0 and a GPU does not: the devices would differ.
    if (std::fpclassify(weights[e]) == FP_SUBNORMAL) {
      return InvalidArgumentError("weights[" + Num(e) + "]=" + FloatText(weights[e]) +
                                  " is subnormal; expected 0 or a normal float (>= 2^-126), which every device "
                                  "reads alike");
    }
  }
  return OkStatus();
}

Status ValidateEdgeTypes(const std::vector<int32_t>& types, const std::vector<int64_t>& indptr) {
  const int64_t num_edges = indptr.back();
  if (static_cast<int64_t>(types.size()) != num_edges) {
    return InvalidArgumentError("edge_types has " + Num(types.size()) + " entries; expected one per edge (" +
                                Num(num_edges) + ")");
  }
  for (size_t e = 0; e < types.size(); ++e) {
    if (types[e] < 0) {
      return InvalidArgumentError("edge_types[" + Num(e) + "]=" + Num(types[e]) + " is negative; expected >= 0");
    }
  }
  for (size_t v = 0; v + 1 < indptr.size(); ++v) {
    for (int64_t e = indptr[v]; e + 1 < indptr[v + 1]; ++e) {
      if (types[e] > types[e + 1]) {
        return InvalidArgumentError("edge_types is not sorted within node " + Num(v) + "'s segment [" + Num(indptr[v]) +
                                    ", " + Num(indptr[v + 1]) + "): edge_types[" + Num(e) + "]=" + Num(types[e]) +
                                    " > edge_types[" + Num(e + 1) + "]=" + Num(types[e + 1]));
      }
    }
  }
  return OkStatus();
}

Status ValidateStorage(const CscStorage& storage, int64_t num_nodes,
                       const std::optional<std::vector<int32_t>>& edge_types) {
  if (storage.indices == npy::DType::kInt32) {
    if (num_nodes - 1 > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError("storage.indices is '<i4' but node ids reach " + Num(num_nodes - 1) +
                                  "; expected '<i8' for graphs this large");
    }
  } else if (storage.indices != npy::DType::kInt64) {
    return InvalidArgumentError(std::string("storage.indices is '") + npy::DTypeDescr(storage.indices) +
                                "'; expected '<i4' or '<i8'");
  }
  if (storage.edge_types == npy::DType::kUInt8) {
    if (edge_types) {
      for (size_t e = 0; e < edge_types->size(); ++e) {
        if ((*edge_types)[e] > 255) {
          return InvalidArgumentError("storage.edge_types is '|u1' but edge_types[" + Num(e) +
                                      "]=" + Num((*edge_types)[e]) + " does not fit; expected '<i4'");
        }
      }
    }
  } else if (storage.edge_types != npy::DType::kInt32) {
    return InvalidArgumentError(std::string("storage.edge_types is '") + npy::DTypeDescr(storage.edge_types) +
                                "'; expected '|u1' or '<i4'");
  }
  return OkStatus();
}

}  // namespace

Result<CscGraph> CscGraph::Create(std::vector<int64_t> indptr, std::vector<int64_t> indices,
                                  std::optional<std::vector<float>> weights,
                                  std::optional<std::vector<int32_t>> edge_types, CscStorage storage) {
  const int64_t num_edges = static_cast<int64_t>(indices.size());
  FL_RETURN_IF_ERROR(ValidateIndptr(indptr, num_edges));
  const int64_t num_nodes = static_cast<int64_t>(indptr.size()) - 1;
  FL_RETURN_IF_ERROR(ValidateIndices(indices, num_nodes));
  if (weights) FL_RETURN_IF_ERROR(ValidateWeights(*weights, num_edges));
  if (edge_types) FL_RETURN_IF_ERROR(ValidateEdgeTypes(*edge_types, indptr));
  FL_RETURN_IF_ERROR(ValidateStorage(storage, num_nodes, edge_types));
  CscGraph graph;
  graph.indptr_ = std::move(indptr);
  graph.indices_ = std::move(indices);
  graph.weights_ = std::move(weights);
  graph.edge_types_ = std::move(edge_types);
  graph.storage_ = storage;
  if (graph.weights_) {
    try {
      graph.weight_alias_ = VectorOnHugePages<uint64_t>(static_cast<size_t>(num_edges));
      graph.rejection_fanouts_.resize(static_cast<size_t>(num_nodes));
      // Every core: the table is a fifth of a large graph's load on one.
      kernels::sampling::BuildWeightTable(graph.indptr_, *graph.weights_, graph.weight_alias_.data(),
                                          graph.rejection_fanouts_.data(),
                                          static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    } catch (const std::bad_alloc&) {
      const uint64_t bytes =
          static_cast<uint64_t>(num_edges) * sizeof(uint64_t) + static_cast<uint64_t>(num_nodes) * sizeof(int32_t);
      return UnavailableError("CscGraph: out of memory allocating " + std::to_string(bytes) +
                              " bytes for the weight table");
    }
  }
  return graph;
}

Result<CscGraph> CscGraph::Load(const std::string& dir) {
  using npy::DType;
  const std::string context = "loading a graph from '" + dir + "'";
  auto with_context = [&](const Status& s) { return s.WithContext(context); };

  Result<std::vector<int64_t>> indptr = npy::ReadNpyInt64(dir + "/indptr.npy", {DType::kInt64, DType::kInt32});
  if (!indptr.ok()) return with_context(indptr.status());
  CscStorage storage;
  Result<std::vector<int64_t>> indices =
      npy::ReadNpyInt64(dir + "/indices.npy", {DType::kInt32, DType::kInt64}, &storage.indices);
  if (!indices.ok()) return with_context(indices.status());

  std::optional<std::vector<float>> weights;
  const std::string weights_path = dir + "/weights.npy";
  Result<bool> has_weights = OptionalFileExists(weights_path);
  if (!has_weights.ok()) return with_context(has_weights.status());
  if (*has_weights) {
    Result<std::vector<float>> w = npy::ReadNpyFloat32(weights_path);
    if (!w.ok()) return with_context(w.status());
    weights = std::move(w).value();
  }

  std::optional<std::vector<int32_t>> edge_types;
  const std::string types_path = dir + "/edge_types.npy";
  Result<bool> has_types = OptionalFileExists(types_path);
  if (!has_types.ok()) return with_context(has_types.status());
  if (*has_types) {
    Result<std::vector<int64_t>> t = npy::ReadNpyInt64(types_path, {DType::kUInt8, DType::kInt32}, &storage.edge_types);
    if (!t.ok()) return with_context(t.status());
    edge_types.emplace(t->begin(), t->end());
  }

  Result<CscGraph> graph =
      Create(std::move(indptr).value(), std::move(indices).value(), std::move(weights), std::move(edge_types), storage);
  if (!graph.ok()) return with_context(graph.status());
  return graph;
}

// Every file is written under a temporary name first and renamed into place
// only when all are written: a failed write (a full disk, ...) leaves the
// previous graph whole instead of a mix of old and new files.
Status CscGraph::Save(const std::string& dir) const {
  const std::string context = "saving a graph to '" + dir + "'";
  static std::atomic<uint64_t> counter{0};
  const std::string tag = ".staged." + std::to_string(getpid()) + "." + std::to_string(counter++);
  struct File {
    std::string path, staged;
  };
  std::vector<File> files;
  auto stage = [&](const std::string& name) {
    files.push_back({dir + "/" + name, dir + "/." + name + tag});
    return files.back().staged;
  };
  auto discard = [&](const Status& s) {
    for (const File& f : files) unlink(f.staged.c_str());
    return s.WithContext(context);
  };
  Status s = npy::WriteNpyInt(stage("indptr.npy"), indptr_, npy::DType::kInt64);
  if (s.ok()) s = npy::WriteNpyInt(stage("indices.npy"), indices_, storage_.indices);
  if (s.ok() && weights_) s = npy::WriteNpyFloat32(stage("weights.npy"), *weights_);
  if (s.ok() && edge_types_) {
    s = npy::WriteNpyInt(stage("edge_types.npy"), std::vector<int64_t>(edge_types_->begin(), edge_types_->end()),
                         storage_.edge_types);
  }
  if (!s.ok()) return discard(s);
  for (const File& f : files) {
    if (rename(f.staged.c_str(), f.path.c_str()) != 0) {
      return discard(
          InvalidArgumentError("cannot rename '" + f.staged + "' to '" + f.path + "': " + std::strerror(errno)));
    }
  }
  const std::pair<const char*, bool> optional_files[] = {{"weights.npy", weights_.has_value()},
                                                         {"edge_types.npy", edge_types_.has_value()}};
  for (const auto& [name, written] : optional_files) {
    const std::string path = dir + "/" + name;
    if (!written && unlink(path.c_str()) != 0 && errno != ENOENT) {
      return InvalidArgumentError("cannot remove stale '" + path + "': " + std::strerror(errno)).WithContext(context);
    }
  }
  return OkStatus();
}

}  // namespace faultline
