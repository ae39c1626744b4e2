// Provides PlanRoute: the MPI counts and displacements of one rank's part
// of MpiTransport::RouteToOwners (an MPI_Ialltoallv of row ids and one of
// float32 rows), checked against MPI's int counts before any data moves.
//
// Every rank plans from the same matrix of row counts (gathered from every
// rank), so every rank reaches the same verdict: all route, or all fail
// naming the same rank, and none waits in a collective the others skipped.
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_ROUTE_PLAN_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_ROUTE_PLAN_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"

namespace faultline {

// What a rank announces in place of its row counts when it refused its own
// batches (it fails with its own reason; the others name it).
inline constexpr int64_t kRefusedRowCount = -1;

struct RoutePlan {
  // By peer rank: rows (ids) and float32 values, sent and received, with
  // their displacements, as MPI_Ialltoallv takes them.
  std::vector<int> send_rows, send_row_offsets, receive_rows, receive_row_offsets;
  std::vector<int> send_floats, send_float_offsets, receive_floats, receive_float_offsets;
  int64_t total_receive_rows = 0;
};

// `counts[s * size + r]` is the number of rows rank s sends rank r (or
// kRefusedRowCount from every entry of a rank that refused). Fails, naming
// the first rank at fault, when a rank refused, announced a negative count,
// or would send or receive more than INT_MAX rows or float32 values in all
// (MPI counts and displacements are ints).
Result<RoutePlan> PlanRoute(const std::vector<int64_t>& counts, int size, int rank, int64_t dim);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_ROUTE_PLAN_H_
