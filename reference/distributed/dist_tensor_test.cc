#include "reference/distributed/dist_tensor.h"

#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/distributed/in_process_transport.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

Tensor Ids(const std::vector<int64_t>& ids) { return *Tensor::FromVector(ids); }
Tensor Rows(const std::vector<float>& values, int64_t dim) {
  return *Tensor::FromVector(values, {static_cast<int64_t>(values.size()) / dim, dim});
}
std::vector<float> Values(const Result<Tensor>& t) { return *t->Cpu()->ToVector<float>(); }

class DistTensorTest : public ::testing::Test {
 protected:
  DistTensorTest() : transport_(*InProcessTransport::Create(3)) {}
  DistTensor Make(IdLookup lookup = IdLookup::kCopyToHost) {
    return *DistTensor::Create(transport_, "feat", *RangePartitionBook::Create({2, 2, 5}), 2, lookup);
  }
  std::vector<float> All(const DistTensor& t) { return *t.PullHost({0, 1, 2, 3, 4}); }
  InProcessTransport transport_;
};

TEST_F(DistTensorTest, StartsZeroAndPullsInInputOrderWithDuplicates) {
  DistTensor t = Make();
  FL_ASSERT_OK(t.Push(Ids({4, 0, 3}), Rows({4, 4.5, 0, 0.5, 3, 3.5}, 2)));
  EXPECT_EQ(Values(t.Pull(Ids({3, 4, 3, 1, 0}))), (std::vector<float>{3, 3.5, 4, 4.5, 3, 3.5, 0, 0, 0, 0.5}));
}

TEST_F(DistTensorTest, OverwriteKeepsTheLastRowOfARepeatedId) {
  DistTensor t = Make();
  FL_ASSERT_OK(t.Push(Ids({2, 2, 2}), Rows({1, 1, 2, 2, 3, 3}, 2)));
  EXPECT_EQ(Values(t.Pull(Ids({2}))), (std::vector<float>{3, 3}));
}

TEST_F(DistTensorTest, AdditivePushAddsEveryRowOfARepeatedId) {
  DistTensor t = Make();
  FL_ASSERT_OK(t.Push(Ids({1}), Rows({10, 20}, 2)));
  FL_ASSERT_OK(t.PushAdd(Ids({1, 4, 1}), Rows({1, 2, 5, 5, 3, 4}, 2)));
  EXPECT_EQ(Values(t.Pull(Ids({1, 4}))), (std::vector<float>{14, 26, 5, 5}));
}

TEST_F(DistTensorTest, AttachFindsTheTensorByNameAndUnknownNamesAreListed) {
  DistTensor t = Make();
  FL_ASSERT_OK(t.Push(Ids({3}), Rows({7, 8}, 2)));
  Result<DistTensor> attached = DistTensor::Attach(transport_, "feat");
  FL_ASSERT_OK(attached);
  EXPECT_EQ(Values(attached->Pull(Ids({3}))), (std::vector<float>{7, 8}));
  Status unknown = DistTensor::Attach(transport_, "faet").status();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "no distributed tensor named 'faet'; known tensors: feat");
  EXPECT_EQ(DistTensor::Create(transport_, "feat", *RangePartitionBook::Even(5, 3), 2).status().message(),
            "a distributed tensor named 'feat' already exists");
}

TEST_F(DistTensorTest, BookMustMatchTheTransportsPartitions) {
  EXPECT_EQ(DistTensor::Create(transport_, "x", *RangePartitionBook::Even(5, 2), 2).status().message(),
            "tensor 'x': the partition book has 2 partitions; the in-process transport has 3");
  EXPECT_EQ(DistTensor::Create(transport_, "x", *RangePartitionBook::Even(5, 3), 0).status().message(),
            "tensor 'x': dim is 0; expected >= 1");
}

// ids x dim x 4 bytes past int64 used to wrap to a small allocation that
// Create accepted, and the first pull read past it.
TEST_F(DistTensorTest, ATensorWhoseBytesOverflowIsRefusedAndNotCreated) {
  const int64_t ids = int64_t{1} << 61;
  auto book = RangePartitionBook::Create({ids / 4, ids / 2, ids});
  FL_ASSERT_OK(book);
  EXPECT_EQ(DistTensor::Create(transport_, "huge", *book, 4).status().message(),
            "tensor 'huge': 2305843009213693952 ids of dim 4 are more float32 bytes than an int64 counts; expected "
            "fewer ids or a smaller dim");
  EXPECT_EQ(transport_.FindTensor("huge").status().code(), StatusCode::kNotFound);
}

TEST_F(DistTensorTest, BadInputIsNamedAndChangesNothing) {
  DistTensor t = Make();
  FL_ASSERT_OK(t.Push(Ids({0, 1, 2, 3, 4}), Rows({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2)));
  const std::vector<float> before = All(t);

  Status out_of_range = t.Push(Ids({0, 5}), Rows({0, 0, 0, 0}, 2));
  EXPECT_EQ(out_of_range.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(out_of_range.message(),
            "DistTensor('feat').push: nid2partid: ids[1] is 5; expected an id in [0, 5) (the partition book covers 5 "
            "ids in 3 partitions)");
  EXPECT_EQ(t.PushAdd(Ids({-1}), Rows({0, 0}, 2)).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(t.Pull(Ids({7})).status().code(), StatusCode::kOutOfRange);

  Status dtype = t.Pull(*Tensor::FromVector<float>({1.0f})).status();
  EXPECT_EQ(dtype.message(),
            "DistTensor('feat').pull: ids has dtype float32 and shape [1]; expected a 1-D int64 tensor");

  Status shape = t.Push(Ids({0, 1}), Rows({1, 2, 3}, 3));
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.message(),
            "DistTensor('feat').push: rows has dtype float32 and shape [1, 3]; expected float32 [2, 2] (one row of "
            "dim 2 per id)");
  EXPECT_EQ(t.PushAdd(Ids({0}), *Tensor::FromVector<int64_t>({1, 2}, {1, 2})).message(),
            "DistTensor('feat').push_add: rows has dtype int64 and shape [1, 2]; expected float32 [1, 2] (one row of "
            "dim 2 per id)");
  EXPECT_EQ(All(t), before);
}

class DistTensorDeviceTest : public DistTensorTest {
 protected:
  void SetUp() override {
    auto runtime = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(runtime);
    runtime_ = *runtime;
  }
  Tensor OnDevice(const Tensor& t) { return *t.To(Device::Cuda(0), runtime_); }
  DeviceRuntime* runtime_ = nullptr;
};

TEST_F(DistTensorDeviceTest, DeviceIdsGetRowsOnTheirDevice) {
  for (IdLookup lookup : {IdLookup::kCopyToHost, IdLookup::kOnDevice}) {
    InProcessTransport transport = *InProcessTransport::Create(3);
    DistTensor t = *DistTensor::Create(transport, "feat", *RangePartitionBook::Create({2, 2, 5}), 2, lookup);
    FL_ASSERT_OK(t.Push(OnDevice(Ids({4, 1})), OnDevice(Rows({4, 4, 1, 1}, 2))));
    FL_ASSERT_OK(t.PushAdd(OnDevice(Ids({4})), Rows({1, 1}, 2)));
    Result<Tensor> rows = t.Pull(OnDevice(Ids({1, 4, 4})));
    FL_ASSERT_OK(rows);
    EXPECT_EQ(rows->device(), Device::Cuda(0));
    EXPECT_EQ(Values(rows), (std::vector<float>{1, 1, 5, 5, 5, 5})) << IdLookupName(lookup);
    EXPECT_EQ(Values(t.Pull(Ids({1, 4}))), (std::vector<float>{1, 1, 5, 5}));
  }
}

// F3's legacy path: the lookup takes a host view of device ids.
TEST_F(DistTensorDeviceTest, HostViewLookupRefusesDeviceIds) {
  DistTensor t = Make(IdLookup::kHostView);
  Status status = t.Pull(OnDevice(Ids({1}))).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "DistTensor('feat').pull: nid2partid: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() "
            "to copy the tensor to host memory first.");
  EXPECT_EQ(Values(t.Pull(Ids({1}))), (std::vector<float>{0, 0}));
}

}  // namespace
}  // namespace faultline
