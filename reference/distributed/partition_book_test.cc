#include "reference/distributed/partition_book.h"

#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

// Partitions [0, 3) [3, 3) [3, 7) [7, 10): one of them empty.
RangePartitionBook Book() { return *RangePartitionBook::Create({3, 3, 7, 10}); }

TEST(RangePartitionBookTest, Nid2PartIdIsSearchsortedRight) {
  Tensor ids = *Tensor::FromVector<int64_t>({0, 2, 3, 6, 7, 9, 3});
  Result<Tensor> partids = Book().Nid2PartId(ids);
  FL_ASSERT_OK(partids);
  EXPECT_EQ(*partids->ToVector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 2, 3, 3, 2}));
}

TEST(RangePartitionBookTest, Nid2LocalIdSubtractsThePartitionStart) {
  Result<Tensor> local = Book().Nid2LocalId(*Tensor::FromVector<int64_t>({7, 9}), 3);
  FL_ASSERT_OK(local);
  EXPECT_EQ(*local->ToVector<int64_t>(), (std::vector<int64_t>{0, 2}));
  Status wrong = Book().Nid2LocalId(*Tensor::FromVector<int64_t>({7, 2}), 3).status();
  EXPECT_EQ(wrong.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(wrong.message(), "nid2localid: ids[1] is 2; partition 3 owns [7, 10)");
}

TEST(RangePartitionBookTest, EvenSplitsSizesDifferingByAtMostOne) {
  RangePartitionBook book = *RangePartitionBook::Even(10, 4);
  EXPECT_EQ(book.ends(), (std::vector<int64_t>{3, 6, 8, 10}));
  EXPECT_EQ(RangePartitionBook::Even(2, 4)->ends(), (std::vector<int64_t>{1, 2, 2, 2}));
}

TEST(RangePartitionBookTest, RejectsBadEnds) {
  EXPECT_EQ(RangePartitionBook::Create({}).status().message(),
            "partition ends are empty; expected at least one partition");
  EXPECT_EQ(RangePartitionBook::Create({4, 2}).status().message(),
            "partition ends[1] is 2; expected >= 4 (ends never decrease)");
  EXPECT_EQ(RangePartitionBook::Create({-1}).status().message(),
            "partition ends[0] is -1; expected >= 0 (ends never decrease)");
  EXPECT_EQ(RangePartitionBook::Even(5, 0).status().message(), "num_partitions is 0; expected >= 1");
}

// DGL maps an id >= N to a partition that does not exist; faultline names it.
TEST(RangePartitionBookTest, OutOfRangeIdsAreNamed) {
  for (IdLookup lookup : {IdLookup::kHostView, IdLookup::kCopyToHost, IdLookup::kOnDevice}) {
    Status status = Book().Locate(*Tensor::FromVector<int64_t>({1, 10}), lookup).status();
    EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
    EXPECT_EQ(status.message(),
              "nid2partid: ids[1] is 10; expected an id in [0, 10) (the partition book covers 10 ids in 4 partitions)");
  }
  EXPECT_EQ(Book().Nid2PartId(*Tensor::FromVector<int64_t>({-3})).status().code(), StatusCode::kOutOfRange);
}

TEST(RangePartitionBookTest, WrongDtypeIsNamed) {
  Status status = Book().Locate(*Tensor::FromVector<int32_t>({1, 2}), IdLookup::kCopyToHost).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "ids has dtype int32 and shape [2]; expected a 1-D int64 tensor");
}

TEST(IdLookupTest, NamesRoundTrip) {
  for (IdLookup lookup : {IdLookup::kHostView, IdLookup::kCopyToHost, IdLookup::kOnDevice}) {
    EXPECT_EQ(*ParseIdLookup(IdLookupName(lookup)), lookup);
  }
  EXPECT_EQ(ParseIdLookup("gpu").status().message(),
            "--id-lookup is 'gpu'; expected host-view, copy-to-host or on-device");
}

class DeviceLookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runtime = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(runtime);
    runtime_ = *runtime;
  }
  Tensor OnDevice(const std::vector<int64_t>& ids) { return *Tensor::FromVector(ids)->To(Device::Cuda(0), runtime_); }
  DeviceRuntime* runtime_ = nullptr;
};

// F3: DGL 2.1.0 took nids.numpy() of device ids.
TEST_F(DeviceLookupTest, HostViewRefusesDeviceIdsWithPyTorchsMessage) {
  Status status = Book().Locate(OnDevice({1, 2}), IdLookup::kHostView).status();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "nid2partid: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
            "host memory first.");
  EXPECT_EQ(Book().Nid2PartId(OnDevice({1})).status().message(), status.message());
}

TEST_F(DeviceLookupTest, DeviceKernelEqualsHostLookup) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 1000; ++i) ids.push_back((i * 7919) % 10);
  Result<std::pair<Tensor, Tensor>> device = Book().LocateOnDevice(OnDevice(ids));
  FL_ASSERT_OK(device);
  EXPECT_EQ(device->first.device(), Device::Cuda(0));
  Tensor host_ids = *Tensor::FromVector(ids);
  EXPECT_EQ(*device->first.Cpu()->ToVector<int64_t>(), *Book().Nid2PartId(host_ids)->ToVector<int64_t>());
  IdLocations host = *Book().Locate(host_ids, IdLookup::kCopyToHost);
  EXPECT_EQ(*device->second.Cpu()->ToVector<int64_t>(), host.localids);
  for (IdLookup lookup : {IdLookup::kCopyToHost, IdLookup::kOnDevice}) {
    IdLocations located = *Book().Locate(OnDevice(ids), lookup);
    EXPECT_EQ(located.partids, host.partids) << IdLookupName(lookup);
    EXPECT_EQ(located.localids, host.localids) << IdLookupName(lookup);
  }
}

TEST_F(DeviceLookupTest, DeviceKernelNamesTheFirstOutOfRangeId) {
  Status status = Book().LocateOnDevice(OnDevice({4, 12, -1, 99})).status();
  EXPECT_EQ(status.code(), StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(),
            "ids[1] is 12; expected an id in [0, 10) (the partition book covers 10 ids in 4 partitions)");
}

TEST_F(DeviceLookupTest, EmptyDeviceIds) {
  IdLocations located = *Book().Locate(OnDevice({}), IdLookup::kOnDevice);
  EXPECT_TRUE(located.partids.empty());
}

}  // namespace
}  // namespace faultline
