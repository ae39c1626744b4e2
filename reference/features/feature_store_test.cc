// Checks IndexSelect on the host, from device memory and from pinned memory
// (simcuda; real CUDA in the gpu-tagged target): same rows, same errors.
#include "reference/features/feature_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "reference/base/status_matchers.h"
#include "reference/runtime/simcuda_runtime.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

Tensor MakeTable(int64_t rows, int64_t dim) {
  std::vector<float> values(rows * dim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  return *Tensor::FromVector(values, {rows, dim});
}

class IndexSelectTest : public testing::Test {
 protected:
  void SetUp() override {
    auto rt = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(rt);
    rt_ = *rt;
  }
  DeviceRuntime* rt_ = nullptr;
};

TEST_F(IndexSelectTest, DeviceAndPinnedGathersEqualTheHostGather) {
  Tensor table = MakeTable(100, 7);
  Tensor ids = *Tensor::FromVector<int64_t>({3, 99, 0, 3, 42});
  auto host = IndexSelect(table, ids);
  FL_ASSERT_OK(host);
  EXPECT_EQ(host->shape(), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ((*host->ToVector<float>())[7], 99 * 7 * 0.5f);

  auto device_ids = ids.To(Device::Cuda(0), rt_);
  auto device_table = table.To(Device::Cuda(0), rt_);
  auto from_device = IndexSelect(*device_table, *device_ids);
  FL_ASSERT_OK(from_device);
  EXPECT_EQ(from_device->device(), Device::Cuda(0));
  EXPECT_EQ(*from_device->Cpu()->ToVector<float>(), *host->ToVector<float>());

  Tensor pinned = MakeTable(100, 7);
  FL_ASSERT_OK(pinned.Pin(*rt_));
  auto from_pinned = IndexSelect(pinned, *device_ids);
  FL_ASSERT_OK(from_pinned);
  EXPECT_EQ(*from_pinned->Cpu()->ToVector<float>(), *host->ToVector<float>());
}

TEST_F(IndexSelectTest, OutOfRangeIdsAreNamedOnEveryPath) {
  Tensor table = MakeTable(10, 2);
  Tensor ids = *Tensor::FromVector<int64_t>({1, 2, 10, -1});
  const std::string expected = "ids[2] is 10; expected a row in [0, 10)";
  EXPECT_EQ(IndexSelect(table, ids).status().message(), expected);
  auto device_ids = ids.To(Device::Cuda(0), rt_);
  EXPECT_EQ(IndexSelect(*table.To(Device::Cuda(0), rt_), *device_ids).status().message(), expected);
  FL_ASSERT_OK(table.Pin(*rt_));
  EXPECT_EQ(IndexSelect(table, *device_ids).status().message(), expected);
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

TEST_F(IndexSelectTest, UnreachableTablesAreRefusedWithTheRemedy) {
  Tensor table = MakeTable(10, 2);
  auto device_ids = Tensor::FromVector<int64_t>({1})->To(Device::Cuda(0), rt_);
  EXPECT_EQ(IndexSelect(table, *device_ids).status().message(),
            "IndexSelect: ids are on cuda:0 but the table is on cpu and not pinned; pin it or copy it to the device");
  auto device_table = table.To(Device::Cuda(0), rt_);
  EXPECT_EQ(IndexSelect(*device_table, *Tensor::FromVector<int64_t>({1})).status().message(),
            "IndexSelect: ids are on cpu but the table is on cuda:0; move the ids to cuda:0 first");
}

// Device equality compares type and index only: cuda:0 of another runtime
// instance is not reachable, and a kernel given its memory would fault.
TEST_F(IndexSelectTest, TensorsOfAnotherRuntimeInstanceAreRefused) {
  SimCudaRuntime other;
  Tensor table = MakeTable(10, 2);
  Tensor ids = *Tensor::FromVector<int64_t>({1, 2});
  Tensor device_ids = *ids.To(Device::Cuda(0), rt_);
  Tensor other_table = *table.To(Device::Cuda(0), &other);
  auto from_other = IndexSelect(other_table, device_ids);
  ASSERT_FALSE(from_other.ok());
  EXPECT_EQ(from_other.status().code(), StatusCode::kInvalidArgument);
  std::ostringstream expected;
  expected << "IndexSelect: the table (cuda:0) belongs to simcuda runtime " << static_cast<const void*>(&other)
           << " but the ids (cuda:0) to " << rt_->name() << " runtime " << static_cast<const void*>(rt_)
           << "; expected tensors of one runtime instance (copy through the host)";
  EXPECT_EQ(from_other.status().message(), expected.str());
  // A host table pinned by the other instance.
  Tensor pinned = MakeTable(10, 2);
  FL_ASSERT_OK(pinned.Pin(other));
  EXPECT_THAT(IndexSelect(pinned, device_ids).status().message(),
              testing::HasSubstr("IndexSelect: the table (cpu, pinned) belongs to simcuda runtime 0x"));
  // An out buffer of the other instance.
  Tensor device_table = *table.To(Device::Cuda(0), rt_);
  Tensor other_out = *Tensor::Empty(DType::kFloat32, {2, 2}, Device::Cuda(0), &other);
  EXPECT_THAT(IndexSelectInto(device_table, device_ids, other_out).message(),
              testing::HasSubstr("IndexSelectInto: out (cuda:0) belongs to simcuda runtime 0x"));
  // Nothing ran: neither runtime holds an error.
  FL_EXPECT_OK(rt_->PeekAtLastError());
  FL_EXPECT_OK(other.PeekAtLastError());
  FL_ASSERT_OK(pinned.Unpin());
}

// IndexSelectInto gives IndexSelect's rows in a buffer the caller reuses.
TEST_F(IndexSelectTest, IntoAReusedBufferEqualsIndexSelectOnEveryPath) {
  Tensor table = MakeTable(100, 7);
  Tensor pinned = MakeTable(100, 7);
  FL_ASSERT_OK(pinned.Pin(*rt_));
  Tensor device_table = *table.To(Device::Cuda(0), rt_);
  Tensor host_out = *Tensor::Empty(DType::kFloat32, {5, 7});  // the same buffers for both id lists
  Tensor device_out = *Tensor::Empty(DType::kFloat32, {5, 7}, Device::Cuda(0), rt_);
  for (const std::vector<int64_t>& picked :
       {std::vector<int64_t>{3, 99, 0, 3, 42}, std::vector<int64_t>{7, 7, 1, 98, 50}}) {
    Tensor ids = *Tensor::FromVector<int64_t>(picked);
    Tensor device_ids = *ids.To(Device::Cuda(0), rt_);
    const std::vector<float> expected = *IndexSelect(table, ids)->ToVector<float>();
    FL_ASSERT_OK(IndexSelectInto(table, ids, host_out));
    EXPECT_EQ(*host_out.ToVector<float>(), expected);
    FL_ASSERT_OK(IndexSelectInto(device_table, device_ids, device_out));
    EXPECT_EQ(*device_out.Cpu()->ToVector<float>(), expected);
    FL_ASSERT_OK(IndexSelectInto(pinned, device_ids, device_out));
    EXPECT_EQ(*device_out.Cpu()->ToVector<float>(), expected);
  }
}

// A gather from device ids checks them and gathers with one round trip to
// the host, which reads one word back; with a bad id, one more word (its
// value), and nothing is written. With a scratch, a warm call allocates
// nothing; without, it allocates and frees one word.
TEST_F(IndexSelectTest, AGatherFromDeviceIdsWaitsOnceAndWithAScratchAllocatesNothing) {
  Tensor table = MakeTable(100, 7);
  Tensor device_table = *table.To(Device::Cuda(0), rt_);
  const std::vector<float> sentinel(3 * 7, -1.0f);
  Tensor device_out;
  auto reset_out = [&] { device_out = *Tensor::FromVectorOn<float>(sentinel, Device::Cuda(0), rt_, {3, 7}); };
  reset_out();
  Tensor good = *Tensor::FromVectorOn<int64_t>({3, 99, 0}, Device::Cuda(0), rt_);
  const std::vector<float> expected = *IndexSelect(table, *good.Cpu())->ToVector<float>();
  GatherScratch scratch;
  FL_ASSERT_OK(IndexSelectInto(device_table, good, device_out, &scratch));  // allocates the scratch's words
  for (GatherScratch* with : {&scratch, static_cast<GatherScratch*>(nullptr)}) {
    SCOPED_TRACE(with != nullptr ? "with a scratch" : "without");
    reset_out();
    const uint64_t waits = rt_->host_waits(), bytes = rt_->bytes_to_host(), allocs = rt_->device_alloc_calls();
    FL_ASSERT_OK(IndexSelectInto(device_table, good, device_out, with));
    EXPECT_EQ(rt_->host_waits() - waits, 1u);
    EXPECT_EQ(rt_->bytes_to_host() - bytes, sizeof(int64_t));
    EXPECT_EQ(rt_->device_alloc_calls() - allocs, with != nullptr ? 0u : 2u);
    EXPECT_EQ(*device_out.Cpu()->ToVector<float>(), expected);

    reset_out();
    Tensor bad = *Tensor::FromVectorOn<int64_t>({3, 100, 0}, Device::Cuda(0), rt_);
    const uint64_t bad_bytes = rt_->bytes_to_host();
    EXPECT_EQ(IndexSelectInto(device_table, bad, device_out, with).message(),
              "ids[1] is 100; expected a row in [0, 100)");
    EXPECT_EQ(rt_->bytes_to_host() - bad_bytes, 2 * sizeof(int64_t));
    EXPECT_EQ(*device_out.Cpu()->ToVector<float>(), sentinel);
  }
}

// A queued gather waits for nothing: its rows and verdict land with the
// caller's next wait for the stream (here a device synchronize), and the
// verdict then reads them without another; with a warm scratch nothing is
// allocated. A bad id leaves `out` untouched and is named as
// IndexSelectInto names it. One queued gather per scratch at a time.
TEST_F(IndexSelectTest, AQueuedGatherLandsWithTheCallersNextWait) {
  Tensor table = MakeTable(100, 7);
  Tensor device_table = *table.To(Device::Cuda(0), rt_);
  const std::vector<float> sentinel(3 * 7, -1.0f);
  Tensor out = *Tensor::FromVectorOn<float>(sentinel, Device::Cuda(0), rt_, {3, 7});
  Tensor good = *Tensor::FromVectorOn<int64_t>({3, 99, 0}, Device::Cuda(0), rt_);
  const std::vector<float> expected = *IndexSelect(table, *good.Cpu())->ToVector<float>();
  GatherScratch scratch;
  FL_ASSERT_OK(QueueIndexSelectInto(device_table, good, out, scratch));  // the scratch's words and event
  FL_ASSERT_OK(scratch.Verdict());
  const uint64_t waits = rt_->host_waits(), bytes = rt_->bytes_to_host(), allocs = rt_->device_alloc_calls();
  FL_ASSERT_OK(QueueIndexSelectInto(device_table, good, out, scratch));
  EXPECT_EQ(rt_->host_waits() - waits, 0u);
  FL_ASSERT_OK(rt_->DeviceSynchronize());
  FL_ASSERT_OK(scratch.Verdict());
  EXPECT_EQ(rt_->host_waits() - waits, 1u);  // the caller's own
  EXPECT_EQ(rt_->bytes_to_host() - bytes, sizeof(int64_t));
  EXPECT_EQ(rt_->device_alloc_calls() - allocs, 0u);
  EXPECT_EQ(*out.Cpu()->ToVector<float>(), expected);

  Tensor bad_out = *Tensor::FromVectorOn<float>(sentinel, Device::Cuda(0), rt_, {3, 7});
  Tensor bad = *Tensor::FromVectorOn<int64_t>({3, 100, 0}, Device::Cuda(0), rt_);
  FL_ASSERT_OK(QueueIndexSelectInto(device_table, bad, bad_out, scratch));
  EXPECT_EQ(QueueIndexSelectInto(device_table, good, out, scratch).message(),
            "QueueIndexSelectInto: the scratch's last queued gather has no verdict yet; expected "
            "GatherScratch::Verdict first");
  EXPECT_EQ(scratch.Verdict().message(), "ids[1] is 100; expected a row in [0, 100)");
  EXPECT_EQ(*bad_out.Cpu()->ToVector<float>(), sentinel);
  EXPECT_EQ(scratch.Verdict().message(),
            "GatherScratch::Verdict: no queued gather awaits its verdict; expected a QueueIndexSelectInto first");

  // Host ids, and a wrong `out`, are refused before anything is queued.
  Tensor host_out = *Tensor::Empty(DType::kFloat32, {3, 7});
  EXPECT_EQ(QueueIndexSelectInto(table, *good.Cpu(), host_out, scratch).message(),
            "QueueIndexSelectInto: ids are on cpu; expected device ids (IndexSelectInto gathers host ids at once)");
  Tensor short_out = *Tensor::Empty(DType::kFloat32, {2, 7}, Device::Cuda(0), rt_);
  EXPECT_EQ(QueueIndexSelectInto(device_table, good, short_out, scratch).message(),
            "QueueIndexSelectInto: out must be a float32 tensor of shape [3, 7] on cuda:0 (where the ids are), got "
            "float32 [2, 7] on cuda:0");
  EXPECT_EQ(scratch.Verdict().code(), StatusCode::kFailedPrecondition);
}

// A scratch stays on the device and runtime of its first use.
TEST_F(IndexSelectTest, AScratchOfAnotherRuntimeIsRefusedByName) {
  SimCudaRuntime other;
  GatherScratch scratch;
  FL_ASSERT_OK(scratch.Words(other, Device::Cuda(0)));
  Tensor device_table = *MakeTable(10, 2).To(Device::Cuda(0), rt_);
  Tensor ids = *Tensor::FromVectorOn<int64_t>({1, 2}, Device::Cuda(0), rt_);
  Tensor out = *Tensor::Empty(DType::kFloat32, {2, 2}, Device::Cuda(0), rt_);
  std::ostringstream expected;
  expected << "GatherScratch: holds words on cuda:0 of simcuda runtime " << static_cast<const void*>(&other)
           << "; asked for cuda:0 of " << rt_->name() << " runtime " << static_cast<const void*>(rt_);
  EXPECT_EQ(IndexSelectInto(device_table, ids, out, &scratch).message(), expected.str());
  EXPECT_EQ(scratch.Words(other, Device::Cpu()).status().message(),
            "GatherScratch::Words: device cpu; expected the cuda device of the ids");
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

TEST_F(IndexSelectTest, IntoAWrongBufferOrWithABadIdWritesNothing) {
  Tensor table = MakeTable(10, 2);
  Tensor ids = *Tensor::FromVector<int64_t>({1, 2});
  const std::vector<float> sentinel = {-1, -1, -1, -1};
  Tensor out = *Tensor::FromVector<float>(sentinel, {2, 2});
  Tensor wrong_shape = *Tensor::FromVector<float>({-1, -1, -1}, {3, 1});
  EXPECT_EQ(IndexSelectInto(table, ids, wrong_shape).message(),
            "IndexSelectInto: out must be a float32 tensor of shape [2, 2] on cpu (where the ids are), got float32 "
            "[3, 1] on cpu");
  Tensor on_device = *out.To(Device::Cuda(0), rt_);
  EXPECT_EQ(IndexSelectInto(table, ids, on_device).message(),
            "IndexSelectInto: out must be a float32 tensor of shape [2, 2] on cpu (where the ids are), got float32 "
            "[2, 2] on cuda:0");
  EXPECT_EQ(IndexSelectInto(table, *Tensor::FromVector<int64_t>({1, 10}), out).message(),
            "ids[1] is 10; expected a row in [0, 10)");
  EXPECT_EQ(IndexSelectInto(*table.To(Device::Cuda(0), rt_),
                            *Tensor::FromVector<int64_t>({-3, 1})->To(Device::Cuda(0), rt_), on_device)
                .message(),
            "ids[0] is -3; expected a row in [0, 10)");
  EXPECT_EQ(*out.ToVector<float>(), sentinel);
  EXPECT_EQ(*on_device.Cpu()->ToVector<float>(), sentinel);
}

// An out that is the table (or shares its storage: a copy of a tensor
// shares it) would have rows written over rows still to be read: refused on
// the host and on the device alike, and nothing is written.
TEST_F(IndexSelectTest, IntoTheTableItselfIsRefused) {
  Tensor table = MakeTable(2, 3);
  const std::vector<float> rows = *table.ToVector<float>();
  Tensor ids = *Tensor::FromVector<int64_t>({1, 0});
  const std::string expected = "IndexSelectInto: out shares memory with the table; expected a separate buffer";
  Status into_itself = IndexSelectInto(table, ids, table);
  EXPECT_EQ(into_itself.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(into_itself.message(), expected);
  Tensor same_storage = table;
  EXPECT_EQ(IndexSelectInto(table, ids, same_storage).message(), expected);
  EXPECT_EQ(*table.ToVector<float>(), rows);

  Tensor device_table = *table.To(Device::Cuda(0), rt_);
  Tensor device_ids = *ids.To(Device::Cuda(0), rt_);
  EXPECT_EQ(IndexSelectInto(device_table, device_ids, device_table).message(), expected);
  EXPECT_EQ(*device_table.Cpu()->ToVector<float>(), rows);
  // A separate buffer of the same shape is fine.
  Tensor device_out = *Tensor::Empty(DType::kFloat32, {2, 3}, Device::Cuda(0), rt_);
  FL_ASSERT_OK(IndexSelectInto(device_table, device_ids, device_out));
  EXPECT_EQ(*device_out.Cpu()->ToVector<float>(), (std::vector<float>{1.5f, 2.0f, 2.5f, 0.0f, 0.5f, 1.0f}));
  FL_EXPECT_OK(rt_->PeekAtLastError());
}

// A table with no columns has no bytes (a null data pointer): its rows are
// empty on every path, and nothing is copied (memcpy must not get null).
TEST_F(IndexSelectTest, ATableWithNoColumnsGivesEmptyRows) {
  Tensor table = *Tensor::Empty(DType::kFloat32, {5, 0});
  Tensor ids = *Tensor::FromVector<int64_t>({1, 2});
  Result<Tensor> host = IndexSelect(table, ids);
  FL_ASSERT_OK(host);
  EXPECT_EQ(host->shape(), (std::vector<int64_t>{2, 0}));
  Tensor out = *Tensor::Empty(DType::kFloat32, {2, 0});
  FL_EXPECT_OK(IndexSelectInto(table, ids, out));
  EXPECT_EQ(IndexSelect(table, *Tensor::FromVector<int64_t>({5})).status().message(),
            "ids[0] is 5; expected a row in [0, 5)");
  Result<Tensor> device = IndexSelect(*table.To(Device::Cuda(0), rt_), *ids.To(Device::Cuda(0), rt_));
  FL_ASSERT_OK(device);
  EXPECT_EQ(device->shape(), (std::vector<int64_t>{2, 0}));
}

TEST(IndexSelectArgsTest, WrongDtypesAndShapesAreNamed) {
  Tensor table = MakeTable(4, 2);
  EXPECT_EQ(IndexSelect(table, *Tensor::FromVector<int32_t>({1})).status().message(),
            "IndexSelect: ids must be a 1-D int64 tensor, got int32 with 1 dimensions");
  EXPECT_EQ(IndexSelect(*Tensor::FromVector<float>({1, 2}), *Tensor::FromVector<int64_t>({0})).status().message(),
            "IndexSelect: table must be a 2-D float32 tensor, got float32 with 1 dimensions");
}

TEST(FeatureStoreTest, AddNamesTheDtypeAndShapeItGot) {
  FeatureStore store;
  EXPECT_EQ(store.Add("ids", *Tensor::FromVector<int64_t>({1, 2, 3})).message(),
            "FeatureStore::Add: feature 'ids' must be a 2-D float32 tensor, got int64 of shape [3]");
  EXPECT_EQ(store.Add("cube", *Tensor::Empty(DType::kFloat32, {2, 3, 4})).message(),
            "FeatureStore::Add: feature 'cube' must be a 2-D float32 tensor, got float32 of shape [2, 3, 4]");
  EXPECT_EQ(store.Get("ids").status().code(), StatusCode::kNotFound);  // nothing was added
}

TEST(FeatureStoreTest, NamesAreUniqueAndUnknownNamesListTheKnownOnes) {
  FeatureStore store;
  FL_ASSERT_OK(store.Add("feat", MakeTable(4, 2)));
  EXPECT_EQ(store.Add("feat", MakeTable(4, 2)).message(), "FeatureStore::Add: feature 'feat' already exists");
  auto missing = store.IndexSelect("label", *Tensor::FromVector<int64_t>({0}));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no feature named 'label'; known features: feat");
  auto rows = store.IndexSelect("feat", *Tensor::FromVector<int64_t>({3, 0}));
  FL_ASSERT_OK(rows);
  EXPECT_EQ(*rows->ToVector<float>(), (std::vector<float>{3.0f, 3.5f, 0.0f, 0.5f}));
}

}  // namespace
}  // namespace faultline
