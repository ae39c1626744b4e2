#include "reference/tensor/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/process/process.h"

namespace faultline {
namespace {

DeviceRuntime& Sim() { return GetRuntime(RuntimeKind::kSimCuda); }

TEST(TensorTest, RoundTripsThroughTheDeviceBitForBit) {
  auto host = Tensor::FromVector<float>({1.5f, -2.0f, 3.25f, 0.0f}, {2, 2});
  FL_ASSERT_OK(host);
  auto dev = host->To(Device::Cuda(0), &Sim());
  FL_ASSERT_OK(dev);
  EXPECT_EQ(dev->device(), Device::Cuda(0));
  EXPECT_EQ(dev->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Sim().GetPointerAttributes(dev->raw_data())->type, MemoryType::kDevice);
  auto back = dev->Cpu();
  FL_ASSERT_OK(back);
  EXPECT_EQ(*back->ToVector<float>(), (std::vector<float>{1.5f, -2.0f, 3.25f, 0.0f}));
}

// A prefix shares the memory of the tensor it narrows, on the host and on a
// device, and keeps it alive; bad lengths and 0-d tensors are named.
TEST(TensorTest, APrefixSharesTheMemoryItNarrows) {
  auto rows = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  FL_ASSERT_OK(rows);
  auto first_two = rows->Prefix(2);
  FL_ASSERT_OK(first_two);
  EXPECT_EQ(first_two->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(first_two->raw_data(), rows->raw_data());
  EXPECT_EQ(first_two->nbytes(), 4 * sizeof(float));
  EXPECT_EQ(*first_two->ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(rows->Prefix(0)->numel(), 0);
  auto dev = Tensor::FromVectorOn<int64_t>({7, 8, 9}, Device::Cuda(0), &Sim());
  FL_ASSERT_OK(dev);
  Result<Tensor> kept = dev->Prefix(2);
  FL_ASSERT_OK(kept);
  *dev = Tensor();  // the prefix holds the memory on its own
  EXPECT_EQ(kept->device(), Device::Cuda(0));
  EXPECT_EQ(*kept->Cpu()->ToVector<int64_t>(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(rows->Prefix(4).status().message(),
            "Tensor::Prefix: length 4 of a tensor of shape [3, 2]; expected a length in [0, 3]");
  EXPECT_EQ(rows->Prefix(-1).status().message(),
            "Tensor::Prefix: length -1 of a tensor of shape [3, 2]; expected a length in [0, 3]");
  auto scalar = Tensor::Empty(DType::kFloat32, {});
  FL_ASSERT_OK(scalar);
  EXPECT_EQ(scalar->Prefix(0).status().message(), "Tensor::Prefix: a 0-d tensor; expected at least one dimension");
}

TEST(TensorTest, HostViewOfADeviceTensorIsRefusedWithPyTorchsWords) {
  auto dev = Tensor::FromVector<int64_t>({1, 2, 3})->To(Device::Cuda(0), &Sim());
  FL_ASSERT_OK(dev);
  auto view = dev->HostData<int64_t>();
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(view.status().message(),
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory "
            "first.");
  EXPECT_FALSE(dev->ToVector<int64_t>().ok());
}

TEST(TensorTest, WrongDtypeViewNamesBothTypes) {
  auto t = Tensor::FromVector<int32_t>({1, 2});
  auto view = t->HostData<int64_t>();
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().message(), "host view as int64 of a tensor of dtype int32");
}

TEST(TensorTest, BadShapesAndMissingRuntimeAreClearErrors) {
  auto negative = Tensor::Empty(DType::kFloat32, {3, -1});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "Tensor::Empty: shape[1] is -1; expected a size >= 0");
  auto no_runtime = Tensor::Empty(DType::kFloat32, {3}, Device::Cuda(0));
  ASSERT_FALSE(no_runtime.ok());
  EXPECT_THAT(no_runtime.status().message(), testing::HasSubstr("needs a device runtime"));
  auto mismatch = Tensor::FromVector<int64_t>({1, 2, 3}, {2, 2});
  EXPECT_FALSE(mismatch.ok());
  auto bad_device = Tensor::Empty(DType::kFloat32, {3}, Device::Cuda(5), &Sim());
  ASSERT_FALSE(bad_device.ok());
  EXPECT_EQ(bad_device.status().cuda_error()->name, "cudaErrorInvalidDevice");
  (void)Sim().GetLastError();
}

TEST(TensorTest, AShapeWhoseByteCountOverflowsIsRefused) {
  // 2^62 float32 elements need 2^64 bytes: unchecked, the size wrapped to 0.
  auto bytes = Tensor::Empty(DType::kFloat32, {int64_t{1} << 62});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bytes.status().message(),
            "Tensor::Empty: shape [4611686018427387904] of dtype float32 needs more than 2^63-1 bytes (the element "
            "or byte count overflows int64); expected a shape whose byte count fits in int64");
  // The element count itself overflows int64.
  auto elements = Tensor::Empty(DType::kUInt8, {int64_t{1} << 32, int64_t{1} << 32});
  ASSERT_FALSE(elements.ok());
  EXPECT_THAT(elements.status().message(), testing::HasSubstr("shape [4294967296, 4294967296] of dtype uint8"));
  // Also on a device, before the runtime is asked for anything.
  auto dev = Tensor::Empty(DType::kInt64, {int64_t{1} << 61}, Device::Cuda(0), &Sim());
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), StatusCode::kInvalidArgument);
  // A zero dimension makes the tensor empty, however large the others are.
  auto empty = Tensor::Empty(DType::kFloat32, {int64_t{1} << 62, int64_t{1} << 62, 0});
  FL_ASSERT_OK(empty);
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_EQ(empty->nbytes(), 0u);
}

TEST(TensorTest, PinRegistersWithTheRuntimeAndRecordsTheOwner) {
  auto t = Tensor::FromVector<float>(std::vector<float>(1024, 1.0f));
  FL_ASSERT_OK(t->Pin(Sim()));
  EXPECT_TRUE(t->is_pinned());
  EXPECT_EQ(t->pinned_by(), getpid());
  EXPECT_TRUE(*Sim().IsPinned(t->raw_data()));
  Status again = t->Pin(Sim());
  EXPECT_EQ(again.code(), StatusCode::kFailedPrecondition);
  FL_ASSERT_OK(t->Unpin());
  EXPECT_FALSE(*Sim().IsPinned(t->raw_data()));
  EXPECT_EQ(t->Unpin().code(), StatusCode::kFailedPrecondition);
}

TEST(TensorTest, AForkedCopyDoesNotUnpinTheParentsMemoryOnDestruction) {
  auto t = Tensor::FromVector<float>(std::vector<float>(256, 2.0f));
  FL_ASSERT_OK(t->Pin(Sim()));
  auto child = ChildProcess::Fork([&] {
    *t = Tensor();  // the child's last reference goes away here
    // An attempted cudaHostUnregister in this forked child would have failed
    // and left cudaErrorInitializationError as the last error.
    return Sim().PeekAtLastError().ok() ? 0 : 1;
  });
  FL_ASSERT_OK(child);
  auto exit = child->Wait(std::chrono::seconds(30));
  FL_ASSERT_OK(exit);
  EXPECT_TRUE(exit->succeeded()) << exit->Describe();
  EXPECT_TRUE(*Sim().IsPinned(t->raw_data()));
  FL_EXPECT_OK(t->Unpin());
}

}  // namespace
}  // namespace faultline
