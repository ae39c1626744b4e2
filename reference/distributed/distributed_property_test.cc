// The distributed layer over in-process partitions (P = 1..4) against one
// local tensor and against the dense optimizer reference.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "reference/distributed/in_process_transport.h"
#include "reference/distributed/testing/distributed_properties.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

RC_GTEST_PROP(DistTensorProperty, BehavesLikeOneLocalTensor, ()) {
  const int partitions = *rc::gen::inRange(1, 5);
  const int64_t num_ids = *rc::gen::inRange<int64_t>(1, 30);
  const int64_t dim = *rc::gen::inRange<int64_t>(1, 4);
  const IdLookup lookup = *rc::gen::element(IdLookup::kCopyToHost, IdLookup::kOnDevice);
  InProcessTransport transport = *InProcessTransport::Create(partitions);
  RangePartitionBook book = *RangePartitionBook::Create(*GenPartitionEnds(num_ids, partitions));
  DistTensor tensor = *DistTensor::Create(transport, "t", book, dim, lookup);
  Result<DeviceRuntime*> runtime = DeviceRuntimeUnderTest();
  RC_ASSERT(runtime.ok());
  CheckDistTensorAgainstLocalTensor(tensor, *runtime);
}

RC_GTEST_PROP(SparseOptimizerProperty, StepsEqualTheDenseReference, ()) {
  const int partitions = *rc::gen::inRange(1, 5);
  const OptimizerCase c = *GenOptimizerCase(partitions, 1);
  InProcessTransport transport = *InProcessTransport::Create(partitions);
  Result<std::vector<float>> distributed = RunDistributedOptimizer(transport, c, "emb");
  RC_ASSERT(distributed.ok());
  RC_ASSERT(*distributed == RunDenseOptimizer(c));
}

}  // namespace
}  // namespace faultline
