// Implements PlanRoute.
#include "reference/distributed/route_plan.h"

#include <climits>
#include <string>

namespace faultline {
namespace {

// "N float32 values (R rows of dim D)", or the rows alone past int64.
std::string Values(int64_t rows, int64_t dim) {
  int64_t values = 0;
  const std::string of = std::to_string(rows) + " rows of dim " + std::to_string(dim);
  if (__builtin_mul_overflow(rows, dim, &values))
    return "more than " + std::to_string(INT64_MAX) + " float32 values (" + of + ")";
  return std::to_string(values) + " float32 values (" + of + ")";
}

// Whether `rows` rows of `dim` values fit one MPI count (and, so, its displacements).
bool FitsAnInt(int64_t rows, int64_t dim) {
  int64_t values = 0;
  return !__builtin_mul_overflow(rows, dim, &values) && values <= INT_MAX;
}

std::vector<int> Offsets(const std::vector<int>& counts) {
  std::vector<int> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

}  // namespace

Result<RoutePlan> PlanRoute(const std::vector<int64_t>& counts, int size, int rank, int64_t dim) {
  if (size < 1 || rank < 0 || rank >= size || counts.size() != static_cast<size_t>(size) * size) {
    return InternalError("PlanRoute: " + std::to_string(counts.size()) + " counts for rank " + std::to_string(rank) +
                         " of " + std::to_string(size) + "; expected size x size");
  }
  if (dim < 1 || dim > INT_MAX) {
    return InvalidArgumentError("dim is " + std::to_string(dim) + "; expected 1 to " + std::to_string(INT_MAX));
  }
  auto count = [&](int from, int to) { return counts[static_cast<size_t>(from) * size + to]; };
  const std::string limit =
      "; one MPI call moves at most " + std::to_string(INT_MAX) + ": expected fewer rows per call, or a smaller dim";
  // Senders first, in rank order, then receivers: the first rank at fault is named alike everywhere.
  for (int s = 0; s < size; ++s) {
    int64_t rows = 0;
    for (int r = 0; r < size; ++r) {
      const int64_t c = count(s, r);
      if (c == kRefusedRowCount) {
        return InvalidArgumentError("rank " + std::to_string(s) +
                                    " refused its own batches (its error says why; nothing was routed)");
      }
      if (c < 0) {
        return DataLossError("rank " + std::to_string(s) + " announced " + std::to_string(c) + " rows for rank " +
                             std::to_string(r) + "; expected a count >= 0");
      }
      if (__builtin_add_overflow(rows, c, &rows)) rows = INT64_MAX;
    }
    if (!FitsAnInt(rows, dim)) {
      return InvalidArgumentError("rank " + std::to_string(s) + " sends " + Values(rows, dim) + " in all" + limit);
    }
  }
  for (int r = 0; r < size; ++r) {
    int64_t rows = 0;
    for (int s = 0; s < size; ++s) rows += count(s, r);  // each sender's total fits an int: no overflow
    if (!FitsAnInt(rows, dim)) {
      return InvalidArgumentError("rank " + std::to_string(r) + " would receive " + Values(rows, dim) + " in all" +
                                  limit);
    }
  }
  // Every total fits an int now, so every count and displacement below does.
  RoutePlan plan;
  for (int peer = 0; peer < size; ++peer) {
    plan.send_rows.push_back(static_cast<int>(count(rank, peer)));
    plan.receive_rows.push_back(static_cast<int>(count(peer, rank)));
    plan.send_floats.push_back(static_cast<int>(count(rank, peer) * dim));
    plan.receive_floats.push_back(static_cast<int>(count(peer, rank) * dim));
    plan.total_receive_rows += count(peer, rank);
  }
  plan.send_row_offsets = Offsets(plan.send_rows);
  plan.receive_row_offsets = Offsets(plan.receive_rows);
  plan.send_float_offsets = Offsets(plan.send_floats);
  plan.receive_float_offsets = Offsets(plan.receive_floats);
  return plan;
}

}  // namespace faultline
