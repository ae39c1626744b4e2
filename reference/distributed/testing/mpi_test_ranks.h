// Provides the rank programs of the MPI tests (one host and across hosts):
// child entry points that RunMpiJob starts as ranks, registered when this
// library is linked (alwayslink). Each reports "ok" (sometimes followed by a
// digest) or its error through ReportFromRank.
//
//   mpi_state_machine [digest]        the last rank drives the DistTensor state machine
//   mpi_optimizer SEED CASES [digest] optimizer steps vs the dense reference, checked on rank 0
//   mpi_bad_input                     each rank sends its own bad input
//   mpi_mismatched_tensors            ranks create different tensors, or refuse their own
//   mpi_optimizer_arguments           ranks refuse their optimizer's arguments, or differ
//   mpi_dead_rank                     rank 2 dies while the others wait in a barrier
//   mpi_die_joining WHERE             rank 2 is killed while joining: before_init (after its
//                                     "started" mark, before MPI_Init) or after_init
//   mpi_stall_before_connect          rank 0 stalls before the liveness mesh; the others exit()
//   mpi_step_refused                  rank 1 refuses an optimizer step; all fail, then all step
//   mpi_route_refused                 rank 2 refuses its RouteToOwners batches; all fail, then route
//   mpi_hammer OP TARGET SECONDS      every rank repeats OP (pull, push, push_add) on
//                                     16 rows of partition TARGET ("cross": the rank
//                                     half a world away), marking "hammering" after 3
//   mpi_large_batch                   every rank pushes, push_adds, pulls 12,000 rows per partition
//   mpi_where                         reports its host name and addresses
#ifndef FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_TEST_RANKS_H_
#define FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_TEST_RANKS_H_

#include <functional>
#include <string>

#include "reference/distributed/mpi_transport.h"
#include "reference/distributed/testing/mpi_launcher.h"

namespace faultline {

// Runs `body` as one rank and reports its outcome ("ok", "ok " + what the
// body put in `detail`, or the error); exit code 0 when it succeeded.
int RunRank(const std::function<Status(MpiTransport&, std::string* detail)>& body);

// The seed of mpi_optimizer's cases: FAULTLINE_TEST_SEED when set (to replay
// a failure), else a new one each run; printed with how to replay it. Fails
// on a FAULTLINE_TEST_SEED that is not a number.
Result<uint64_t> OptimizerSeed();

// The rows per partition and columns of mpi_hammer's tensor "feat".
inline constexpr int64_t kHammerRowsPerRank = 64;
inline constexpr int64_t kHammerIds = 16;

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_DISTRIBUTED_TESTING_MPI_TEST_RANKS_H_
