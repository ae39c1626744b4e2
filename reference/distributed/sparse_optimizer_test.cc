#include "reference/distributed/sparse_optimizer.h"

#include <cmath>

#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/distributed/in_process_transport.h"
#include "reference/distributed/testing/dense_reference.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

class SparseOptimizerTest : public ::testing::Test {
 protected:
  SparseOptimizerTest()
      : transport_(*InProcessTransport::Create(2)),
        embedding_(*DistEmbedding::Create(transport_, "emb", *RangePartitionBook::Create({2, 4}), 1,
                                          [](int64_t id, int64_t) { return static_cast<float>(id); })) {}

  // One forward of `ids` and a backward of `grad` (dim 1).
  void Lookup(const std::vector<int64_t>& ids, const std::vector<float>& grad) {
    FL_ASSERT_OK(embedding_.Forward(*Tensor::FromVector(ids)));
    FL_ASSERT_OK(embedding_.Backward(*Tensor::FromVector(grad, {static_cast<int64_t>(grad.size()), 1})));
  }
  std::vector<float> Weights() { return *embedding_.weights().PullHost({0, 1, 2, 3}); }

  InProcessTransport transport_;
  DistEmbedding embedding_;
};

TEST_F(SparseOptimizerTest, AdagradAveragesDuplicateGradients) {
  auto adagrad = SparseAdagrad::Create({&embedding_}, 0.5f).value();
  // id 3 gets 1 and 3 (mean 2) across two forwards; id 0 gets 4.
  Lookup({3, 0}, {1.0f, 4.0f});
  Lookup({3}, {3.0f});
  FL_ASSERT_OK(adagrad->Step());
  // w -= lr * g / (sqrt(g * g) + eps) = w - 0.5 on a first step, whatever g > 0.
  const std::vector<float> w = Weights();
  EXPECT_FLOAT_EQ(w[0], 0.0f - 0.5f * 4.0f / (4.0f + 1e-10f));
  EXPECT_FLOAT_EQ(w[1], 1.0f);
  EXPECT_FLOAT_EQ(w[2], 2.0f);
  EXPECT_FLOAT_EQ(w[3], 3.0f - 0.5f * 2.0f / (2.0f + 1e-10f));
  // A second step sees G = 4 + 16: w -= 0.5 * 4 / sqrt(20).
  Lookup({3}, {4.0f});
  FL_ASSERT_OK(adagrad->Step());
  EXPECT_FLOAT_EQ(Weights()[3], w[3] - 0.5f * 4.0f / (std::sqrt(20.0f) + 1e-10f));
}

TEST_F(SparseOptimizerTest, AdamBiasCorrectsByEachRowsOwnStep) {
  auto adam = SparseAdam::Create({&embedding_}, 0.1f).value();
  Lookup({1}, {2.0f});
  FL_ASSERT_OK(adam->Step());
  Lookup({1, 2}, {2.0f, 2.0f});
  FL_ASSERT_OK(adam->Step());
  // A first step of Adam moves by lr * sign(g) (up to eps), whatever the step count of other rows.
  const std::vector<float> w = Weights();
  EXPECT_NEAR(w[2], 2.0f - 0.1f, 1e-6);
  // Row 1: two steps with the same gradient move it by lr each time.
  EXPECT_NEAR(w[1], 1.0f - 0.2f, 1e-6);
  EXPECT_FLOAT_EQ(w[0], 0.0f);
}

TEST_F(SparseOptimizerTest, StateTensorsAreNamedAfterTheEmbedding) {
  FL_ASSERT_OK(SparseAdam::Create({&embedding_}, 0.1f));
  for (const char* name : {"emb_step", "emb_mem", "emb_power"}) FL_EXPECT_OK(transport_.FindTensor(name)) << name;
  FL_ASSERT_OK(SparseAdagrad::Create({&embedding_}, 0.1f));
  FL_EXPECT_OK(transport_.FindTensor("emb_sum"));
}

TEST_F(SparseOptimizerTest, StepWithoutBackwardIsRefusedAndKeepsTheTrace) {
  auto adagrad = SparseAdagrad::Create({&embedding_}, 0.5f).value();
  FL_ASSERT_OK(embedding_.Forward(*Tensor::FromVector<int64_t>({1})));
  Status status = adagrad->Step();
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "step: forward 0 of embedding 'emb' has no gradient; call Backward once per Forward before Step");
  EXPECT_EQ(embedding_.trace().size(), 1u);
  EXPECT_EQ(Weights(), (std::vector<float>{0, 1, 2, 3}));
}

// A step refused for one parameter changes no other: every parameter is
// checked before any is updated.
TEST_F(SparseOptimizerTest, AStepRefusedForOneEmbeddingChangesNone) {
  auto other = DistEmbedding::Create(transport_, "other", *RangePartitionBook::Create({2, 4}), 1,
                                     [](int64_t id, int64_t) { return static_cast<float>(id); });
  FL_ASSERT_OK(other);
  auto adagrad = SparseAdagrad::Create({&embedding_, &*other}, 0.5f).value();
  Lookup({1}, {2.0f});
  FL_ASSERT_OK(other->Forward(*Tensor::FromVector<int64_t>({1})));  // no Backward
  EXPECT_EQ(adagrad->Step().message(),
            "step: forward 0 of embedding 'other' has no gradient; call Backward once per Forward before Step");
  EXPECT_EQ(Weights(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(embedding_.trace().size(), 1u);
  EXPECT_EQ(*DistTensor::Attach(transport_, "emb_sum")->PullHost({1}), std::vector<float>{0.0f});
}

TEST_F(SparseOptimizerTest, BackwardRefusesANonFiniteGradient) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    FL_ASSERT_OK(embedding_.Forward(*Tensor::FromVector<int64_t>({1, 2})));
    const std::string text = std::isnan(bad) ? "nan" : bad > 0 ? "inf" : "-inf";
    EXPECT_EQ(embedding_.Backward(*Tensor::FromVector<float>({1.0f, bad}, {2, 1})).message(),
              "DistEmbedding('emb').backward: grad[1][0] is " + text + " (id 2); expected finite gradients");
    EXPECT_FALSE(embedding_.trace().back().has_grad);
    (void)embedding_.TakeTrace();
  }
}

TEST_F(SparseOptimizerTest, BackwardChecksTheGradient) {
  EXPECT_EQ(embedding_.Backward(*Tensor::FromVector<float>({1.0f}, {1, 1})).message(),
            "DistEmbedding('emb').backward: every forward already has a gradient; call Forward first");
  FL_ASSERT_OK(embedding_.Forward(*Tensor::FromVector<int64_t>({1, 2})));
  EXPECT_EQ(embedding_.Backward(*Tensor::FromVector<float>({1.0f}, {1, 1})).message(),
            "DistEmbedding('emb').backward: grad has dtype float32 and shape [1, 1]; expected float32 [2, 1] (the "
            "forward's output)");
}

TEST_F(SparseOptimizerTest, RejectsBadHyperparameters) {
  EXPECT_EQ(SparseAdagrad::Create({&embedding_}, 0.0f).status().message(),
            "SparseAdagrad: lr is 0; expected a finite value > 0");
  EXPECT_EQ(SparseAdagrad::Create({&embedding_}, -1e-7f).status().message(),
            "SparseAdagrad: lr is -1e-07; expected a finite value > 0");
  EXPECT_EQ(SparseAdagrad::Create({&embedding_}, INFINITY).status().message(),
            "SparseAdagrad: lr is inf; expected a finite value > 0");
  // eps = 0 made a zero gradient's update 0 / 0 = NaN.
  for (float eps : {0.0f, -1.0f, NAN}) {
    EXPECT_EQ(SparseAdagrad::Create({&embedding_}, 0.1f, eps).status().code(), StatusCode::kInvalidArgument) << eps;
    EXPECT_EQ(SparseAdam::Create({&embedding_}, 0.1f, 0.9f, 0.999f, eps).status().code(), StatusCode::kInvalidArgument)
        << eps;
  }
  EXPECT_EQ(SparseAdagrad::Create({&embedding_}, 0.1f, 0.0f).status().message(),
            "SparseAdagrad: eps is 0; expected a finite value > 0");
  EXPECT_EQ(SparseAdam::Create({&embedding_}, 0.1f, 1.0f).status().message(),
            "SparseAdam: beta1 is 1; expected [0, 1)");
  EXPECT_EQ(SparseAdam::Create({&embedding_}, 0.1f, 0.9f, 1.5f).status().message(),
            "SparseAdam: beta2 is 1.5; expected [0, 1)");
  EXPECT_EQ(SparseAdam::Create({}, 0.1f).status().message(), "SparseAdam: params is empty; expected embeddings");
  // Nothing refused above created a state tensor.
  for (const char* name : {"emb_sum", "emb_step", "emb_mem", "emb_power"}) {
    EXPECT_EQ(transport_.FindTensor(name).status().code(), StatusCode::kNotFound) << name;
  }
}

// An embedding given twice used to create its state, then fail on the
// second creation, leaving names taken that no call could free.
TEST_F(SparseOptimizerTest, AnEmbeddingGivenTwiceIsNamedAndCreatesNothing) {
  EXPECT_EQ(SparseAdam::Create({&embedding_, &embedding_}, 0.1f).status().message(),
            "SparseAdam: params[1] is params[0] ('emb'); expected each embedding once");
  EXPECT_EQ(transport_.FindTensor("emb_step").status().code(), StatusCode::kNotFound);
  FL_EXPECT_OK(SparseAdam::Create({&embedding_}, 0.1f));
}

// A step agrees, and ends with a barrier, on the first embedding's
// transport: embeddings on two transports are refused, naming both.
TEST_F(SparseOptimizerTest, EmbeddingsOnTwoTransportsAreRefused) {
  InProcessTransport other = *InProcessTransport::Create(2);
  DistEmbedding elsewhere = *DistEmbedding::Create(other, "other", *RangePartitionBook::Create({2, 4}), 1,
                                                   [](int64_t, int64_t) { return 0.0f; });
  EXPECT_EQ(SparseAdagrad::Create({&embedding_, &elsewhere}, 0.1f).status().message(),
            "SparseAdagrad: params[1] ('other') lives on another transport than params[0] ('emb'); expected every "
            "embedding on one transport");
  EXPECT_EQ(transport_.FindTensor("emb_sum").status().code(), StatusCode::kNotFound);
}

TEST_F(SparseOptimizerTest, AStateNameAlreadyTakenIsNamedBeforeAnyStateIsCreated) {
  FL_ASSERT_OK(DistTensor::Create(transport_, "emb_power", *RangePartitionBook::Create({2, 4}), 1));
  EXPECT_EQ(SparseAdam::Create({&embedding_}, 0.1f).status().message(),
            "SparseAdam: a distributed tensor named 'emb_power' already exists; the optimizer keeps the state of "
            "'emb' there");
  EXPECT_EQ(transport_.FindTensor("emb_step").status().code(), StatusCode::kNotFound);
}

// Delivers, with partition 0's gradients, one more row from "rank 1": id 3,
// outside partition 0 (rows 0 and 1), as a peer with a corrupt or
// disagreeing book would send it.
class MisroutingTransport : public InProcessTransport {
 public:
  MisroutingTransport() : InProcessTransport(2) {}
  Result<std::vector<RowBatch>> RouteToOwners(std::vector<RowBatch> by_partition, int64_t dim) override {
    FL_ASSIGN_OR_RETURN(std::vector<RowBatch> routed, InProcessTransport::RouteToOwners(std::move(by_partition), dim));
    routed[0].ids.push_back(3);
    routed[0].rows.push_back(5.0f);
    routed[0].counts_by_sender.push_back(1);
    return routed;
  }
};

// Before, the owner added its partition's start to the id and updated row
// 3 of partition 1 silently.
TEST(SparseOptimizerRoutingTest, ARowIdOutsideTheReceivingPartitionNamesItsSenderAndChangesNothing) {
  MisroutingTransport transport;
  Result<DistEmbedding> emb = DistEmbedding::Create(transport, "emb", *RangePartitionBook::Create({2, 4}), 1,
                                                    [](int64_t id, int64_t) { return static_cast<float>(id); });
  FL_ASSERT_OK(emb);
  auto adagrad = SparseAdagrad::Create({&*emb}, 0.5f).value();
  FL_ASSERT_OK(emb->Forward(*Tensor::FromVector<int64_t>({1})));
  FL_ASSERT_OK(emb->Backward(*Tensor::FromVector<float>({2.0f}, {1, 1})));
  EXPECT_EQ(adagrad->Step().ToString(),
            "data_loss: step: embedding 'emb': rank 1 sent a gradient for row 3 of partition 0, which has 2 rows; "
            "expected a local row in [0, 2)");
  EXPECT_EQ(*emb->weights().PullHost({0, 1, 2, 3}), (std::vector<float>{0, 1, 2, 3}));
}

TEST(DistEmbeddingDeviceTest, ForwardReturnsRowsOnTheIdsDevice) {
  auto runtime_under_test = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime_under_test);
  DeviceRuntime* runtime = *runtime_under_test;
  InProcessTransport transport = *InProcessTransport::Create(2);
  DistEmbedding embedding = *DistEmbedding::Create(transport, "emb", *RangePartitionBook::Even(4, 2), 2,
                                                   [](int64_t id, int64_t col) { return id * 10.0f + col; });
  Tensor ids = *Tensor::FromVector<int64_t>({3, 0})->To(Device::Cuda(0), runtime);
  Result<Tensor> rows = embedding.Forward(ids);
  FL_ASSERT_OK(rows);
  EXPECT_EQ(rows->device(), Device::Cuda(0));
  EXPECT_EQ(*rows->Cpu()->ToVector<float>(), (std::vector<float>{30, 31, 0, 1}));
  EXPECT_EQ(embedding.trace()[0].ids, (std::vector<int64_t>{3, 0}));
}

}  // namespace
}  // namespace faultline
