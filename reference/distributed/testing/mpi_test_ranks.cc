// Implements the MPI tests' rank programs.
#include "reference/distributed/testing/mpi_test_ranks.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include <rapidcheck.h>

#include "reference/base/parse_int.h"
#include "reference/distributed/sparse_optimizer.h"
#include "reference/distributed/testing/distributed_properties.h"
#include "reference/process/child_registry.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

std::string Hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

constexpr uint64_t kFnvOffset = 14695981039346656037ull;

// Partition ends for `ranks` partitions of 23 ids; partition 1 is empty when there are 3 or more.
RangePartitionBook UnevenBook(int ranks) {
  std::vector<int64_t> ends;
  for (int p = 0; p < ranks; ++p) ends.push_back(23 * (p + 1) / ranks);
  if (ranks >= 3) ends[1] = ends[0];
  return *RangePartitionBook::Create(ends);
}

// The last rank drives a rapidcheck state machine through one-sided pulls and
// pushes; the others only hold their partitions until it is done. With
// "digest", it reports every pulled row's bits folded into one number.
int StateMachineRank(const std::vector<std::string>& args) {
  const bool with_digest = !args.empty() && args[0] == "digest";
  return RunRank([with_digest](MpiTransport& transport, std::string* detail) -> Status {
    FL_ASSIGN_OR_RETURN(DistTensor tensor,
                        DistTensor::Create(transport, "t", UnevenBook(transport.world_size()), 3, IdLookup::kOnDevice));
    if (transport.rank() == transport.world_size() - 1) {
      FL_ASSIGN_OR_RETURN(DeviceRuntime* const runtime, DeviceRuntimeUnderTest());
      uint64_t digest = kFnvOffset;
      const bool held = rc::check("DistTensor over MPI behaves like one local tensor", [&tensor, runtime, &digest] {
        CheckDistTensorAgainstLocalTensor(tensor, runtime, &digest);
      });
      if (!held) return InternalError("the state machine found a difference (see the rapidcheck output above)");
      if (with_digest) *detail = "digest=" + Hex(digest);
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_state_machine", StateMachineRank);

// Every rank generates the same cases from the shared seed, runs its own
// lookups, and rank 0 compares the result with the dense reference.
int OptimizerRank(const std::vector<std::string>& args) {
  const bool with_digest = args.size() > 2 && args[2] == "digest";
  return RunRank([&args, with_digest](MpiTransport& transport, std::string* detail) -> Status {
    // Parsed here, so that a bad argument is reported like any failure of the rank.
    if (args.size() < 2) return InvalidArgumentError("mpi_optimizer: expected the arguments SEED CASES [digest]");
    FL_ASSIGN_OR_RETURN(const uint64_t seed, ParseWholeOrError<uint64_t>(args[0], "mpi_optimizer: SEED"));
    FL_ASSIGN_OR_RETURN(const int cases, ParseWholeOrError<int>(args[1], "mpi_optimizer: CASES"));
    uint64_t digest = kFnvOffset;
    for (int k = 0; k < cases; ++k) {
      const rc::Gen<OptimizerCase> gen = GenOptimizerCase(transport.world_size(), transport.world_size());
      const OptimizerCase c = gen(rc::Random(seed + k), 30).value();
      FL_ASSIGN_OR_RETURN(std::vector<float> weights, RunDistributedOptimizer(transport, c, "emb" + std::to_string(k)));
      if (transport.rank() == 0 && weights != RunDenseOptimizer(c)) {
        return InternalError("case " + std::to_string(k) + " (seed " + std::to_string(seed + k) +
                             ") differs from the dense reference");
      }
      Fold(&digest, weights.data(), weights.size());
    }
    if (with_digest && transport.rank() == 0) *detail = "digest=" + Hex(digest);
    return OkStatus();
  });
}
FL_REGISTER_CHILD("mpi_optimizer", OptimizerRank);

// Each rank sends bad input of its own; only that rank sees an error and the
// data stays as it was.
int BadInputRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", *RangePartitionBook::Even(8, 4), 2));
    const int r = transport.rank();
    if (r == 0) {
      std::vector<float> rows(16);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i);
      FL_RETURN_IF_ERROR(tensor.PushHost({0, 1, 2, 3, 4, 5, 6, 7}, rows, WriteMode::kOverwrite));
    }
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> before, tensor.PullHost({0, 1, 2, 3, 4, 5, 6, 7}));
    FL_RETURN_IF_ERROR(transport.Barrier());
    Status error;
    std::string expected;
    if (r == 0) {
      error = tensor.Pull(*Tensor::FromVector<int64_t>({3, 8})).status();
      expected = "out_of_range: DistTensor('feat').pull: nid2partid: ids[1] is 8; expected an id in [0, 8)";
    } else if (r == 1) {
      error = tensor.Push(*Tensor::FromVector<float>({1.0f}), *Tensor::FromVector<float>({1, 2}, {1, 2}));
      expected = "invalid_argument: DistTensor('feat').push: ids has dtype float32";
    } else if (r == 2) {
      error = tensor.PushAdd(*Tensor::FromVector<int64_t>({6, 7}), *Tensor::FromVector<float>({1, 2, 3}, {1, 3}));
      expected =
          "invalid_argument: DistTensor('feat').push_add: rows has dtype float32 and shape [1, 3]; expected "
          "float32 [2, 2]";
    } else {
      error = DistTensor::Attach(transport, "feet").status();
      expected = "not_found: no distributed tensor named 'feet'; known tensors: feat";
    }
    if (error.ToString().rfind(expected, 0) != 0) {
      return InternalError("rank " + std::to_string(r) + " expected an error starting '" + expected + "', got '" +
                           error.ToString() + "'");
    }
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> after, tensor.PullHost({0, 1, 2, 3, 4, 5, 6, 7}));
    if (after != before) return InternalError("rank " + std::to_string(r) + " sees changed data after bad input");
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_bad_input", BadInputRank);

// Ranks that create different tensors (another dim, book, split or name)
// all fail alike, naming the first rank that differs from rank 0; ranks
// that refuse their own arguments fail with their reason and the others
// name the first of them; and all keep a working transport: the same
// tensor created after works.
int MismatchedTensorsRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    const int r = transport.rank(), size = transport.world_size();
    FL_ASSIGN_OR_RETURN(RangePartitionBook even, RangePartitionBook::Even(8 * size, size));
    FL_ASSIGN_OR_RETURN(RangePartitionBook more, RangePartitionBook::Even(8 * size + 4, size));
    std::vector<int64_t> skewed_ends = even.ends();
    skewed_ends[0] -= 1;  // the same ids, split otherwise
    FL_ASSIGN_OR_RETURN(RangePartitionBook skewed, RangePartitionBook::Create(skewed_ends));
    struct Case {
      std::string name;
      const RangePartitionBook* book;
      int64_t dim;
      std::string difference;
    };
    const Case cases[] = {
        {"feat", &even, r == 1 ? 3 : 4, "rank 1 gives it dim 3; rank 0 gives dim 4"},
        {"feat", r == 3 ? &more : &even, 4,
         "rank 3's partition book covers " + std::to_string(8 * size + 4) + " ids; rank 0's covers " +
             std::to_string(8 * size)},
        {"feat", r == 2 ? &skewed : &even, 4, "rank 2's partition book splits the ids otherwise than rank 0's"},
        {r >= 2 ? "labels" : "feat", &even, 4, "rank 2 creates a tensor of another name at this point than rank 0"},
    };
    for (const Case& c : cases) {
      const std::string expected = "invalid_argument: tensor '" + c.name + "': mpi rank " + std::to_string(r) +
                                   ": the ranks create different tensors: " + c.difference +
                                   " (every rank must create the same tensors, in the same order)";
      const Status created = DistTensor::Create(transport, c.name, *c.book, c.dim).status();
      if (created.ToString() != expected) {
        return InternalError("rank " + std::to_string(r) + " expected '" + expected + "', got '" + created.ToString() +
                             "'");
      }
    }
    // A rank that refuses its own arguments fails with its reason; the
    // others fail naming the first rank that refused, instead of waiting
    // for it at the join limit.
    struct Refusal {
      std::string name;
      int64_t dim;
      bool refuses;  // this rank
      int first_refusing;
      std::string reason;  // what the refusing ranks say
    };
    const Refusal refusals[] = {
        {"feat", r == 1 ? 0 : 4, r == 1, 1, "invalid_argument: tensor 'feat': dim is 0; expected >= 1"},
        {r >= 2 ? "" : "feat", 4, r >= 2, 2, "invalid_argument: tensor name is empty; expected a name"},
        // A row is one MPI count (an int): before, TransferRows truncated
        // such a dim, and the ranks only disagreed on it.
        {"feat", r == 1 ? int64_t{1} << 31 : 4, r == 1, 1,
         "invalid_argument: tensor 'feat': dim is 2147483648; expected <= 2147483647 (the mpi transport moves a row "
         "as one MPI count of float32 values, an int)"},
    };
    for (const Refusal& c : refusals) {
      const bool refuses = c.refuses;
      const std::string expected =
          refuses ? c.reason
                  : "invalid_argument: tensor 'feat': mpi rank " + std::to_string(r) + ": rank " +
                        std::to_string(c.first_refusing) +
                        " refused its own arguments for it (its error says why; nothing was created)";
      const Status created = DistTensor::Create(transport, c.name, even, c.dim).status();
      if (created.ToString() != expected) {
        return InternalError("rank " + std::to_string(r) + " expected '" + expected + "', got '" + created.ToString() +
                             "'");
      }
    }
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", even, 4));
    const int64_t row = ((r + 1) % size) * 8;  // a row of the next rank's partition
    FL_RETURN_IF_ERROR(tensor.PushHost({row}, {1.0f * r, 2, 3, 4}, WriteMode::kOverwrite));
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> got, tensor.PullHost({row}));
    if (got != std::vector<float>{1.0f * r, 2, 3, 4}) return InternalError("the tensor created after lost a row");
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_mismatched_tensors", MismatchedTensorsRank);

// Optimizers that a rank refuses its arguments for, or whose
// hyperparameters differ between the ranks, fail on every rank with no state
// created, naming that rank; the optimizer created after, alike everywhere,
// steps.
int OptimizerArgumentsRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    const int r = transport.rank(), size = transport.world_size();
    const std::string here = "mpi rank " + std::to_string(r) + ": ";
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(8 * size, size));
    FL_ASSIGN_OR_RETURN(DistEmbedding emb, DistEmbedding::Create(transport, "emb", book, 2));
    auto expect = [r](const Status& got, const std::string& expected) -> Status {
      if (got.ToString() == expected) return OkStatus();
      return InternalError("rank " + std::to_string(r) + " expected '" + expected + "', got '" + got.ToString() + "'");
    };
    FL_RETURN_IF_ERROR(expect(SparseAdagrad::Create({&emb}, r == 1 ? 0.0f : 0.1f).status(),
                              r == 1 ? "invalid_argument: SparseAdagrad: lr is 0; expected a finite value > 0"
                                     : "invalid_argument: tensor 'emb_sum': " + here +
                                           "rank 1 refused its own arguments for it (its error says why; nothing "
                                           "was created)"));
    const std::vector<DistEmbedding*> twice = {&emb, &emb};
    FL_RETURN_IF_ERROR(expect(SparseAdam::Create(r == 2 ? twice : std::vector<DistEmbedding*>{&emb}, 0.1f).status(),
                              r == 2 ? "invalid_argument: SparseAdam: params[1] is params[0] ('emb'); expected each "
                                       "embedding once"
                                     : "invalid_argument: tensor 'emb_step': " + here +
                                           "rank 2 refused its own arguments for it (its error says why; nothing "
                                           "was created)"));
    const float beta1 = r == size - 1 ? 0.8f : 0.9f;
    FL_RETURN_IF_ERROR(expect(SparseAdam::Create({&emb}, 0.1f, beta1).status(),
                              "invalid_argument: tensor 'emb_step': " + here +
                                  "the ranks create different tensors: rank " + std::to_string(size - 1) +
                                  " creates it with other settings than rank 0 (this rank's: 'SparseAdam lr 0.1, "
                                  "beta1 " +
                                  (r == size - 1 ? "0.8" : "0.9") +
                                  ", beta2 0.999, eps 1e-08; embeddings 'emb' (dim 2)') (every rank must create the "
                                  "same tensors, in the same order)"));
    // Rank 1 is given one more embedding: every rank fails at the first state tensor.
    FL_ASSIGN_OR_RETURN(DistEmbedding other, DistEmbedding::Create(transport, "other", book, 3));
    const std::vector<DistEmbedding*> both = {&emb, &other};
    FL_RETURN_IF_ERROR(expect(SparseAdagrad::Create(r == 1 ? both : std::vector<DistEmbedding*>{&emb}, 0.1f).status(),
                              "invalid_argument: tensor 'emb_sum': " + here +
                                  "the ranks create different tensors: rank 1 creates it with other settings than "
                                  "rank 0 (this rank's: 'SparseAdagrad lr 0.1, eps 1e-10; embeddings 'emb' (dim 2)" +
                                  (r == 1 ? ", 'other' (dim 3)" : "") +
                                  "') (every rank must create the same tensors, in the same order)"));
    for (const char* state : {"emb_sum", "emb_step", "emb_mem", "emb_power", "other_sum"}) {
      if (transport.FindTensor(state).ok()) return InternalError(std::string("a refused optimizer created ") + state);
    }
    FL_ASSIGN_OR_RETURN(std::unique_ptr<SparseAdam> adam, SparseAdam::Create({&emb}, 0.1f));
    FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(std::vector<int64_t>{0, 8 * size - 1}));
    FL_RETURN_IF_ERROR(emb.Forward(ids).status());
    FL_ASSIGN_OR_RETURN(Tensor grad, Tensor::FromVector(std::vector<float>{1, 1, 1, 1}, {2, 2}));
    FL_RETURN_IF_ERROR(emb.Backward(grad));
    FL_RETURN_IF_ERROR(adam->Step());
    FL_ASSIGN_OR_RETURN(std::vector<float> row, emb.weights().PullHost({0}));
    // One Adam step from 0 with gradient 1 moves a weight by -lr.
    if (std::abs(row[0] + 0.1f) > 1e-6f) return InternalError("row 0 is " + std::to_string(row[0]) + "; expected -0.1");
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_optimizer_arguments", OptimizerArgumentsRank);

// Every rank looks up ids 0 and the last one; rank 1 skips its Backward.
// Its Step refuses; every other rank's Step fails naming rank 1 and its
// reason, before any gradient moves (before: they waited for rank 1 in
// RouteToOwners until their timeout). Nothing changed; after rank 1's
// Backward every rank steps, and one Adagrad step from 0 moves both rows by
// -lr.
int StepRefusedRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    const int r = transport.rank(), size = transport.world_size();
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(4 * size, size));
    FL_ASSIGN_OR_RETURN(DistEmbedding emb, DistEmbedding::Create(transport, "emb", book, 2));
    FL_ASSIGN_OR_RETURN(std::unique_ptr<SparseAdagrad> adagrad, SparseAdagrad::Create({&emb}, 0.1f));
    const std::vector<int64_t> rows = {0, 4 * size - 1};
    FL_ASSIGN_OR_RETURN(Tensor ids, Tensor::FromVector(rows));
    FL_ASSIGN_OR_RETURN(Tensor grad, Tensor::FromVector(std::vector<float>{1, 1, 1, 1}, {2, 2}));
    FL_RETURN_IF_ERROR(emb.Forward(ids).status());
    if (r != 1) FL_RETURN_IF_ERROR(emb.Backward(grad));
    const std::string reason =
        "failed_precondition: step: forward 0 of embedding 'emb' has no gradient; call Backward once per Forward "
        "before Step";
    const std::string expected =
        r == 1 ? reason : "failed_precondition: mpi rank " + std::to_string(r) + ": rank 1 refused the step: " + reason;
    const Status refused = adagrad->Step();
    if (refused.ToString() != expected) {
      return InternalError("rank " + std::to_string(r) + " expected '" + expected + "', got '" + refused.ToString() +
                           "'");
    }
    FL_ASSIGN_OR_RETURN(std::vector<float> after_refusal, emb.weights().PullHost(rows));
    if (after_refusal != std::vector<float>(4, 0.0f)) return InternalError("the refused step changed a row");
    if (r == 1) FL_RETURN_IF_ERROR(emb.Backward(grad));
    FL_RETURN_IF_ERROR(adagrad->Step());
    FL_ASSIGN_OR_RETURN(std::vector<float> stepped, emb.weights().PullHost(rows));
    for (float w : stepped) {
      if (std::abs(w + 0.1f) > 1e-6f) return InternalError("a row is " + std::to_string(w) + "; expected -0.1");
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_step_refused", StepRefusedRank);

// Rank 2 hands RouteToOwners a batch whose rows do not match its ids: it
// fails with its reason, every other rank names it, and nothing moves
// (before: the others routed with counts rank 2 made up from its ids).
// Then every rank routes a good batch: row id r with values (r, p) to each
// partition p; each rank receives one row from every rank, in rank order.
int RouteRefusedRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    const int r = transport.rank(), size = transport.world_size();
    std::vector<RowBatch> good(size);
    for (int p = 0; p < size; ++p) good[p] = RowBatch{{r}, {static_cast<float>(r), static_cast<float>(p)}, {}};
    std::vector<RowBatch> batches = good;
    if (r == 2) batches[0].rows.push_back(9.0f);  // 3 values for 1 id of dim 2
    const std::string expected =
        r == 2 ? "invalid_argument: mpi rank 2: RouteToOwners: the batch for rank 0 holds 3 values for 1 ids; expected "
                 "one row of dim 2 per id"
               : "invalid_argument: mpi rank " + std::to_string(r) +
                     ": routing gradients to their owners: rank 2 refused its own batches (its error says why; "
                     "nothing was routed)";
    const Status refused = transport.RouteToOwners(batches, 2).status();
    if (refused.ToString() != expected) {
      return InternalError("rank " + std::to_string(r) + " expected '" + expected + "', got '" + refused.ToString() +
                           "'");
    }
    FL_ASSIGN_OR_RETURN(std::vector<RowBatch> received, transport.RouteToOwners(good, 2));
    std::vector<int64_t> ids, counts(size, 1);
    std::vector<float> values;
    for (int s = 0; s < size; ++s) {
      ids.push_back(s);
      values.insert(values.end(), {static_cast<float>(s), static_cast<float>(r)});
    }
    if (received.size() != 1 || received[0].ids != ids || received[0].rows != values ||
        received[0].counts_by_sender != counts) {
      return InternalError("rank " + std::to_string(r) + " received the wrong rows after the refusal");
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_route_refused", RouteRefusedRank);

// Rank 0 stalls after the address exchange, before it connects the
// liveness mesh: the others fail to connect at the join limit, naming it,
// and end by returning from main (at exit, MPI_Finalize would wait for
// rank 0 unless the transport's failure is recorded).
int StallBeforeConnectRank(const std::vector<std::string>&) {
  Result<MpiOptions> options = MpiOptionsFromEnv();
  if (!options.ok()) {
    ReportFromRank(options.status().ToString());
    return 1;
  }
  options->before_connect_for_testing = [](int rank) {
    if (rank != 0) return;
    MarkFromRank("stalled");
    for (;;) pause();
  };
  Result<std::unique_ptr<MpiTransport>> transport = MpiTransport::Create(*options);
  ReportFromRank(transport.ok() ? "ok" : transport.status().ToString());
  return transport.ok() ? 0 : 1;  // through exit(): the atexit handlers run
}
FL_REGISTER_CHILD("mpi_stall_before_connect", StallBeforeConnectRank);

// Rank 2 dies (SIGKILL) while the others wait for it in a collective. It
// dies straight after joining, so that the barrier is the only collective
// the others can be in (after a DistTensor::Create, a slower rank was
// sometimes still inside the creation's own barrier).
int DeadRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    if (transport.rank() == 2) kill(getpid(), SIGKILL);
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_dead_rank", DeadRank);

// Argument `index` of a rank program read as seconds (a finite number >= 0).
Result<double> SecondsArg(const std::vector<std::string>& args, size_t index, const char* program) {
  if (index >= args.size()) return InvalidArgumentError(std::string(program) + ": its SECONDS argument is missing");
  const std::string& text = args[index];
  char* end = nullptr;
  const double seconds = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
    return InvalidArgumentError(std::string(program) + ": SECONDS is '" + text + "'; expected a number >= 0");
  }
  return seconds;
}

// Repeats one operation on 16 rows of one partition until it fails or
// SECONDS pass (then it reports ok, which a fault test takes for a miss).
int HammerRank(const std::vector<std::string>& args) {
  return RunRank([&](MpiTransport& transport, std::string*) -> Status {
    // Parsed here, so that a bad argument is reported like any failure of the rank.
    FL_ASSIGN_OR_RETURN(const double seconds, SecondsArg(args, 2, "mpi_hammer"));
    const std::string& op = args[0];
    const std::string& target_arg = args[1];
    const int size = transport.world_size();
    int target = (transport.rank() + size / 2) % size;  // "cross"
    if (target_arg != "cross") {
      FL_ASSIGN_OR_RETURN(target, ParseWholeOrError<int>(target_arg, "mpi_hammer: the target rank"));
    }
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(kHammerRowsPerRank * size, size));
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", book, 4));
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < kHammerIds; ++i) ids.push_back(target * kHammerRowsPerRank + (i * 3) % kHammerRowsPerRank);
    std::vector<float> rows(ids.size() * 4, 1.0f);
    const auto stop = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (int done = 0; std::chrono::steady_clock::now() < stop; ++done) {
      if (done == 3) MarkFromRank("hammering");
      if (op == "pull") {
        FL_RETURN_IF_ERROR(tensor.PullHost(ids).status());
      } else {
        FL_RETURN_IF_ERROR(tensor.PushHost(ids, rows, op == "push" ? WriteMode::kOverwrite : WriteMode::kAdd));
      }
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_hammer", HammerRank);

// Rank 1 reaches DistTensor::Create SECONDS after the others (as a rank
// still loading its data would); then every rank pulls a row of every
// partition. Creating a tensor is setup: the wait is bounded by the join
// limit, not by the operation timeout.
int LateSetupRank(const std::vector<std::string>& args) {
  return RunRank([&args](MpiTransport& transport, std::string*) -> Status {
    FL_ASSIGN_OR_RETURN(const double seconds, SecondsArg(args, 0, "mpi_late_setup"));
    if (transport.rank() == 1) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const int size = transport.world_size();
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(2 * size, size));
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "feat", book, 4));
    std::vector<int64_t> ids;
    for (int r = 0; r < size; ++r) ids.push_back(2 * r);
    FL_RETURN_IF_ERROR(tensor.PullHost(ids).status());
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_late_setup", LateSetupRank);

// Rank 0 starts joining (MpiTransport::Create) SECONDS after MPI_Init, which
// every rank passes together: with a shorter join limit, every other rank
// gives up naming rank 0, the one it has no connection from.
int LateJoinRank(const std::vector<std::string>& args) {
  const Status initialized = InitializeMpi();
  if (!initialized.ok()) {  // reported as is: RunRank would enter MPI_Init again
    ReportFromRank(initialized.ToString());
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Result<double> late = SecondsArg(args, 0, "mpi_late_join");
  if (rank == 0 && late.ok()) std::this_thread::sleep_for(std::chrono::duration<double>(*late));  // late on purpose
  return RunRank([&late](MpiTransport& transport, std::string*) -> Status {
    FL_RETURN_IF_ERROR(late.status());
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_late_join", LateJoinRank);

// Rank 2 is killed (SIGKILL) while joining: "before_init" right after its
// "started" mark, before MPI_Init (as if inside it); "after_init" after
// MPI_Init, before MpiTransport::Create. It never marks "joined" and never
// reports; the others wait for it until the join limit.
int DieJoiningRank(const std::vector<std::string>& args) {
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool victim = rank != nullptr && std::string(rank) == "2";
  if (victim && !args.empty() && args[0] == "before_init") {
    MarkFromRank("started");  // as InitializeMpi does before MPI_Init
    kill(getpid(), SIGKILL);
  }
  const Status initialized = InitializeMpi();
  if (victim) kill(getpid(), SIGKILL);
  return RunRank([&](MpiTransport& transport, std::string*) -> Status {
    FL_RETURN_IF_ERROR(initialized);
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_die_joining", DieJoiningRank);

// Large batches from every rank at once, as dist_bench makes them: 12,000
// rows per partition, so every call moves more rows than kRowsPerCall to
// every rank. Rank r overwrites the rows i with i % size == r (value i + r),
// then every rank adds 1 to every row; each rank then pulls everything and
// checks every value.
int LargeBatchRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string*) -> Status {
    constexpr int64_t kRowsPerRank = 12000;
    const int size = transport.world_size();
    const int64_t total = kRowsPerRank * size;
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(total, size));
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "large", book, 2));
    std::vector<int64_t> mine, all(total);
    for (int64_t i = 0; i < total; ++i) {
      all[i] = (i * 7919) % total;  // every row once, scattered (7919 is prime and does not divide total)
      if (all[i] % size == transport.rank()) mine.push_back(all[i]);
    }
    std::vector<float> rows;
    for (int64_t id : mine) rows.insert(rows.end(), {static_cast<float>(id + transport.rank()), 0.5f});
    FL_RETURN_IF_ERROR(tensor.PushHost(mine, rows, WriteMode::kOverwrite));
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_RETURN_IF_ERROR(tensor.PushHost(all, std::vector<float>(total * 2, 1.0f), WriteMode::kAdd));
    FL_RETURN_IF_ERROR(transport.Barrier());
    FL_ASSIGN_OR_RETURN(std::vector<float> back, tensor.PullHost(all));
    for (int64_t i = 0; i < total; ++i) {
      const int64_t id = all[i];
      const float expected[2] = {static_cast<float>(id + id % size + size), 0.5f + size};
      for (int c = 0; c < 2; ++c) {
        if (back[2 * i + c] != expected[c]) {
          return InternalError("row " + std::to_string(id) + " column " + std::to_string(c) + " is " +
                               std::to_string(back[2 * i + c]) + "; expected " + std::to_string(expected[c]));
        }
      }
    }
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_large_batch", LargeBatchRank);

// Reports "host=<name> ipv4=<addresses>" from inside a job, after pulling a
// row of every partition (so that data crossed every pair of ranks).
int WhereRank(const std::vector<std::string>&) {
  return RunRank([](MpiTransport& transport, std::string* detail) -> Status {
    const int size = transport.world_size();
    FL_ASSIGN_OR_RETURN(RangePartitionBook book, RangePartitionBook::Even(size, size));
    FL_ASSIGN_OR_RETURN(DistTensor tensor, DistTensor::Create(transport, "where", book, 1));
    FL_RETURN_IF_ERROR(
        tensor.PushHost({transport.rank()}, {static_cast<float>(transport.rank())}, WriteMode::kOverwrite));
    FL_RETURN_IF_ERROR(transport.Barrier());
    std::vector<int64_t> all(size);
    for (int r = 0; r < size; ++r) all[r] = r;
    FL_ASSIGN_OR_RETURN(std::vector<float> rows, tensor.PullHost(all));
    for (int r = 0; r < size; ++r) {
      if (rows[r] != static_cast<float>(r))
        return InternalError("row " + std::to_string(r) + " is " + std::to_string(rows[r]));
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    std::string addresses;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) == 0) {
      for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
        char text[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof(text));
        addresses += (addresses.empty() ? "" : ",") + std::string(text);
      }
      freeifaddrs(list);
    }
    *detail = std::string("host=") + host + " ipv4=" + addresses;
    return transport.Barrier();
  });
}
FL_REGISTER_CHILD("mpi_where", WhereRank);

}  // namespace

int RunRank(const std::function<Status(MpiTransport&, std::string* detail)>& body) {
  Result<MpiOptions> options = MpiOptionsFromEnv();
  Status status;
  std::string detail;
  {
    Result<std::unique_ptr<MpiTransport>> transport =
        options.ok() ? MpiTransport::Create(*options) : Result<std::unique_ptr<MpiTransport>>(options.status());
    status = transport.ok() ? body(**transport, &detail) : transport.status();
    if (!status.ok()) {
      ReportFromRank(status.ToString());
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      std::fflush(stderr);
      _exit(1);  // a failed job must not wait in MPI_Finalize for peers
    }
  }  // the transport's final barrier and goodbye, before the report
  ReportFromRank(detail.empty() ? "ok" : "ok " + detail);
  return 0;
}

Result<uint64_t> OptimizerSeed() {
  const char* value = std::getenv("FAULTLINE_TEST_SEED");
  const std::optional<uint64_t> seed =
      value == nullptr ? static_cast<uint64_t>(getpid()) * 1000003u : ParseWhole<uint64_t>(value);
  if (!seed) {
    return InvalidArgumentError(std::string("FAULTLINE_TEST_SEED is '") + value + "'; expected a decimal seed");
  }
  std::printf("optimizer cases from seed %llu (FAULTLINE_TEST_SEED=%llu replays them)\n",
              static_cast<unsigned long long>(*seed), static_cast<unsigned long long>(*seed));
  return *seed;
}

}  // namespace faultline
