// F10 — setting the seed does not reseed the running thread's generator
// (DGL PR 6900, found while testing DGL PR 6895). GraphBolt keeps one random
// engine per thread, created on first use from the manual seed. Before the
// fix, seed() only recorded the seed for engines created later, so a thread
// that had already sampled kept its old stream: seed(2024); sample; seed(2024);
// sample gave two different samples. The fix reseeds the calling thread's
// engine as well. The model below is that registry, used by a small
// with-replacement neighbour-sampling step; faultline's own sampler keys every
// draw by (seed, node, draw) and has no such state. docs/failures/F10.md.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "reference/graph/csc_graph.h"
#include "reference/graph/generators.h"
#include "repro/F10/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr uint64_t kSeed = 2024;
constexpr int64_t kFanout = 4;

enum class SeedBehaviour { kLegacy, kFixed };

// GraphBolt's RandomEngine registry in miniature: every thread owns one
// generator, made on the thread's first draw from the manual seed (or from
// std::random_device when no seed was set). SetManualSeed records the seed
// for generators made later; kFixed also reseeds the calling thread's own.
class GeneratorRegistry {
 public:
  explicit GeneratorRegistry(SeedBehaviour behaviour) : behaviour_(behaviour), id_(NextId()) {}

  void SetManualSeed(uint64_t seed) {
    if (behaviour_ == SeedBehaviour::kFixed) ThreadLocal().seed(seed);  // PR 6900
    std::lock_guard<std::mutex> lock(mutex_);
    manual_seed_ = seed;
  }

  // Returns this thread's generator, creating it on first use.
  std::mt19937_64& ThreadLocal() {
    // Per thread and per registry; destroyed when the thread exits, like
    // a thread_local engine.
    thread_local std::map<uint64_t, std::unique_ptr<std::mt19937_64>> engines;
    std::unique_ptr<std::mt19937_64>& slot = engines[id_];
    if (!slot) {
      std::lock_guard<std::mutex> lock(mutex_);
      slot = std::make_unique<std::mt19937_64>(manual_seed_ ? *manual_seed_ : std::random_device{}());
      ++created_;
    }
    return *slot;
  }

  int created() {
    std::lock_guard<std::mutex> lock(mutex_);
    return created_;
  }

 private:
  static uint64_t NextId() {
    static std::atomic<uint64_t> next{0};
    return next++;
  }

  const SeedBehaviour behaviour_;
  const uint64_t id_;
  std::mutex mutex_;
  std::optional<uint64_t> manual_seed_;
  int created_ = 0;
};

// One sampling step: kFanout draws with replacement per seed from `engine`;
// returns the picked source nodes, seed after seed.
std::vector<int64_t> SampleStep(const CscGraph& graph, const std::vector<int64_t>& seeds, std::mt19937_64& engine) {
  std::vector<int64_t> picks;
  for (int64_t v : seeds) {
    const uint64_t degree = static_cast<uint64_t>(graph.degree(v));
    if (degree == 0) continue;
    for (int64_t j = 0; j < kFanout; ++j) {
      const uint64_t r = engine();
      const uint64_t at = static_cast<uint64_t>((static_cast<unsigned __int128>(r) * degree) >> 64);
      picks.push_back(graph.indices()[graph.indptr()[v] + static_cast<int64_t>(at)]);
    }
  }
  return picks;
}

// Returns "" when equal, else where `got` first differs from `want`.
std::string FirstDifference(const std::vector<int64_t>& want, const std::vector<int64_t>& got) {
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (want[i] != got[i]) {
      return "picks[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", expected " + std::to_string(want[i]);
    }
  }
  if (want.size() != got.size()) {
    return std::to_string(got.size()) + " picks, expected " + std::to_string(want.size());
  }
  return "";
}

Outcome Run(SeedBehaviour behaviour, bool fresh_thread_per_run, const Expected& expected) {
  const std::string process = "main process (pid " + std::to_string(getpid()) + ")";
  std::string transcript = std::string("F10: seed(") + std::to_string(kSeed) + "), sample; seed(" +
                           std::to_string(kSeed) + "), sample; seed " +
                           (behaviour == SeedBehaviour::kLegacy ? "legacy (recorded for new generators only)"
                                                                : "fixed (also reseeds the calling thread)") +
                           (fresh_thread_per_run ? ", each run samples on a new thread" : ", both runs on one thread") +
                           "\n";
  Result<CscGraph> graph = GeneratePowerLaw(500, 5000, /*seed=*/7, /*weighted=*/false);
  if (!graph.ok()) return Unexpected(Observe(graph.status(), process, "setup"), transcript);
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 16; ++v) seeds.push_back(v * 31);

  // What seed(kSeed) promises: the draws of a generator freshly seeded with it.
  std::mt19937_64 fresh(kSeed);
  const std::vector<int64_t> reference = SampleStep(*graph, seeds, fresh);

  GeneratorRegistry registry(behaviour);
  for (int run = 1; run <= 2; ++run) {
    registry.SetManualSeed(kSeed);
    std::vector<int64_t> picks;
    if (fresh_thread_per_run) {
      std::thread sampler([&] { picks = SampleStep(*graph, seeds, registry.ThreadLocal()); });
      sampler.join();
    } else {
      picks = SampleStep(*graph, seeds, registry.ThreadLocal());
    }
    const std::string difference = FirstDifference(reference, picks);
    transcript += "run " + std::to_string(run) + ": " + std::to_string(picks.size()) +
                  " picks, generators made so far " + std::to_string(registry.created()) + ", " +
                  (difference.empty() ? "equal to a generator freshly seeded with " + std::to_string(kSeed)
                                      : "differs: " + difference) +
                  "\n";
    if (!difference.empty()) {
      ObservedError error{"OutputMismatch", 0,
                          "sample_neighbors after seed(" + std::to_string(kSeed) + "), run " + std::to_string(run) +
                              ": " + difference + " (a generator freshly seeded with " + std::to_string(kSeed) + ")",
                          process, "sample_neighbors"};
      return EndedInError(expected, error, transcript);
    }
  }
  if (auto missed = RanToTheEnd(expected, "both runs equal the seeded reference", transcript)) return *missed;
  return PassedIf(
      true,
      "both runs after seed(" + std::to_string(kSeed) + ") are bit-identical to a generator freshly seeded with it",
      transcript);
}

const bool kRegistered = RegisterFailure(Failure{
    "F10",
    "Setting the seed does not reseed the running thread's generator (DGL PR 6900, found testing PR 6895)",
    {
        Reproduces(
            "legacy", "seed; sample; seed; sample on one thread; seed() reaches new generators only",
            OnEveryRuntime(kF10Legacy),
            [](RuntimeKind, const Signature& s) { return Run(SeedBehaviour::kLegacy, false, ExpectSignature{s}); }),
        Passes("fixed", "seed() also reseeds the calling thread's generator (DGL PR 6900)",
               [](RuntimeKind) { return Run(SeedBehaviour::kFixed, false, ExpectPass{}); }),
        Passes("workaround", "legacy seed(); each run samples on a thread started after seed()",
               [](RuntimeKind) { return Run(SeedBehaviour::kLegacy, true, ExpectPass{}); }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
