// F11 — unique-and-compact order depends on thread scheduling (DGL issue
// 7010, fixed by PR 7217; the same hash map in DGL's fused sampler, issue
// 7831). GraphBolt's CPU unique_and_compact inserted the sampled ids into a
// concurrent hash map from several threads; whichever thread inserted a
// repeated id first owned it, and each thread's new ids were numbered in
// thread order, so the compacted ids followed the insertion race. PR 7217
// keeps, for every id, the smallest position at which it occurs
// (InsertAndSetSmaller) and numbers ids by that position: first-appearance
// order, whatever the schedule. The model below is that map; the schedule is
// forced with promises (worker k starts inserting when its predecessor in the
// chosen order has finished), so both interleavings happen on every run.
// docs/failures/F11.md.
#include <unistd.h>

#include <atomic>
#include <future>
#include <limits>
#include <memory>
#include <thread>

#include "reference/graph/generators.h"
#include "reference/sampling/sample_neighbors.h"
#include "reference/sampling/unique_and_compact.h"
#include "repro/F11/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr int64_t kEmpty = -1;  // node ids are >= 0

// An open-addressing id map with lock-free insertion (compare-and-swap on
// the key), as GraphBolt's ConcurrentIdHashMap.
class ConcurrentIdMap {
 public:
  explicit ConcurrentIdMap(size_t expected) {
    size_t capacity = 16;
    while (capacity < 2 * expected) capacity *= 2;
    mask_ = capacity - 1;
    keys_ = std::make_unique<std::atomic<int64_t>[]>(capacity);
    values_ = std::make_unique<std::atomic<int64_t>[]>(capacity);
    for (size_t i = 0; i < capacity; ++i) {
      keys_[i].store(kEmpty, std::memory_order_relaxed);
      values_[i].store(std::numeric_limits<int64_t>::max(), std::memory_order_relaxed);
    }
  }

  // Returns true when this call inserted `id` (it was absent).
  bool Insert(int64_t id) {
    for (size_t slot = Hash(id);; slot = (slot + 1) & mask_) {
      int64_t expected = kEmpty;
      if (keys_[slot].compare_exchange_strong(expected, id)) return true;
      if (expected == id) return false;
    }
  }
  // Inserts `id` and lowers its value to `value` when smaller (PR 7217).
  void InsertAndSetSmaller(int64_t id, int64_t value) {
    std::atomic<int64_t>& v = values_[SlotOf(id, /*insert=*/true)];
    int64_t current = v.load();
    while (value < current && !v.compare_exchange_weak(current, value)) {
    }
  }
  void Set(int64_t id, int64_t value) { values_[SlotOf(id, false)].store(value); }
  int64_t Get(int64_t id) const { return values_[SlotOf(id, false)].load(); }

 private:
  size_t Hash(int64_t id) const {
    uint64_t h = static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> 17) & mask_;
  }
  size_t SlotOf(int64_t id, bool insert) const {
    for (size_t slot = Hash(id);; slot = (slot + 1) & mask_) {
      int64_t key = keys_[slot].load();
      if (key == id) return slot;
      if (key == kEmpty) {
        if (!insert) return slot;  // absent ids are never asked for
        if (keys_[slot].compare_exchange_strong(key, id) || key == id) return slot;
      }
    }
  }

  size_t mask_ = 0;
  std::unique_ptr<std::atomic<int64_t>[]> keys_;
  std::unique_ptr<std::atomic<int64_t>[]> values_;
};

enum class Algorithm { kInsertionOrder, kFirstAppearance };

// Runs `body(worker, begin, end)` for `workers` contiguous chunks of
// [begin, end) on their own threads. With `order`, worker order[k] starts
// only once worker order[k-1] has finished (a forced interleaving); without
// it the workers run freely.
template <typename Body>
void ParallelChunks(int64_t begin, int64_t end, int workers, const std::vector<int>& order, Body body) {
  std::vector<std::promise<void>> done(workers);
  std::vector<int> after(workers, -1);
  for (size_t k = 1; k < order.size(); ++k) after[order[k]] = order[k - 1];
  std::vector<std::thread> threads;
  const int64_t n = end - begin;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      if (after[w] >= 0) done[after[w]].get_future().wait();
      body(w, begin + n * w / workers, begin + n * (w + 1) / workers);
      done[w].set_value();
    });
  }
  for (std::thread& t : threads) t.join();
}

// GraphBolt's CPU unique_and_compact over ids = seeds ++ indices, seeds
// unique: seeds keep positions [0, num_seeds); the other ids are inserted by
// `workers` threads, phase one in `schedule` order.
UniqueAndCompactResult ConcurrentUniqueAndCompact(const std::vector<int64_t>& seeds,
                                                  const std::vector<int64_t>& indices, Algorithm algorithm, int workers,
                                                  const std::vector<int>& schedule) {
  std::vector<int64_t> ids = seeds;
  ids.insert(ids.end(), indices.begin(), indices.end());
  const int64_t num_seeds = static_cast<int64_t>(seeds.size());
  const int64_t n = static_cast<int64_t>(ids.size());
  ConcurrentIdMap map(ids.size());
  std::vector<uint8_t> owner(ids.size(), 0);  // ids[i] is numbered at position i
  std::vector<int64_t> count(workers + 1, 0);

  if (algorithm == Algorithm::kInsertionOrder) {
    for (int64_t i = 0; i < num_seeds; ++i) {
      map.Insert(ids[i]);
      map.Set(ids[i], i);
    }
    // Phase one: the thread whose Insert wins owns the id.
    ParallelChunks(num_seeds, n, workers, schedule, [&](int w, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (map.Insert(ids[i])) {
          owner[i] = 1;
          ++count[w + 1];
        }
      }
    });
  } else {
    // Phase one: every id keeps the smallest position it occurs at.
    ParallelChunks(0, n, workers, schedule, [&](int, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) map.InsertAndSetSmaller(ids[i], i);
    });
    ParallelChunks(num_seeds, n, workers, {}, [&](int w, int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if (map.Get(ids[i]) == i) {
          owner[i] = 1;
          ++count[w + 1];
        }
      }
    });
    for (int64_t i = 0; i < num_seeds; ++i) map.Set(ids[i], i);
  }
  // Phase two: each worker numbers its owned ids after the earlier workers'.
  for (int w = 0; w < workers; ++w) count[w + 1] += count[w];
  UniqueAndCompactResult result;
  result.unique_nodes.assign(num_seeds + count[workers], 0);
  for (int64_t i = 0; i < num_seeds; ++i) result.unique_nodes[i] = ids[i];
  ParallelChunks(num_seeds, n, workers, {}, [&](int w, int64_t b, int64_t e) {
    int64_t position = num_seeds + count[w];
    for (int64_t i = b; i < e; ++i) {
      if (!owner[i]) continue;
      result.unique_nodes[position] = ids[i];
      map.Set(ids[i], position++);
    }
  });
  for (int64_t node : indices) result.compacted_indices.push_back(map.Get(node));
  return result;
}

std::string ScheduleName(int workers, const std::vector<int>& schedule) {
  if (workers == 1) return "1 worker";
  if (schedule.empty()) return std::to_string(workers) + " workers, free-running";
  std::string name = std::to_string(workers) + " workers, inserting in order";
  for (int w : schedule) name += " " + std::to_string(w);
  return name;
}

// Returns "" when equal, else the first element where `got` differs from `want`.
std::string FirstDifference(const UniqueAndCompactResult& want, const UniqueAndCompactResult& got) {
  auto compare = [](const char* what, const std::vector<int64_t>& a, const std::vector<int64_t>& b) -> std::string {
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i] != b[i]) {
        return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(b[i]) + ", expected " +
               std::to_string(a[i]);
      }
    }
    if (a.size() != b.size()) {
      return std::string(what) + " has " + std::to_string(b.size()) + " entries, expected " + std::to_string(a.size());
    }
    return "";
  };
  std::string d = compare("unique_nodes", want.unique_nodes, got.unique_nodes);
  return d.empty() ? compare("compacted_indices", want.compacted_indices, got.compacted_indices) : d;
}

struct Schedule {
  int workers;
  std::vector<int> order;
};

Outcome Run(Algorithm algorithm, const std::vector<Schedule>& schedules, const Expected& expected) {
  const std::string process = "main process (pid " + std::to_string(getpid()) + ")";
  std::string transcript = std::string("F11: unique_and_compact of a sampled layer with a concurrent id map, ") +
                           (algorithm == Algorithm::kInsertionOrder
                                ? "legacy numbering (insertion order: the thread that inserts an id first owns it)"
                                : "fixed numbering (smallest position per id, DGL PR 7217)") +
                           "\n";
  Result<CscGraph> graph = GeneratePowerLaw(2000, 20000, /*seed=*/7, /*weighted=*/false);
  if (!graph.ok()) return Unexpected(Observe(graph.status(), process, "setup"), transcript);
  std::vector<int64_t> seeds;
  for (int64_t v = 0; v < 64; ++v) seeds.push_back(v * 29);
  SamplingOptions options;
  options.rng_seed = 2024;
  Result<SampledSubgraph> layer = SampleNeighbors(*graph, seeds, /*fanout=*/10, /*layer=*/0, options);
  if (!layer.ok()) return Unexpected(Observe(layer.status(), process, "sample_neighbors"), transcript);
  Result<UniqueAndCompactResult> compacted = UniqueAndCompact(seeds, layer->indices);
  if (!compacted.ok()) return Unexpected(Observe(compacted.status(), process, "unique_and_compact"), transcript);
  const UniqueAndCompactResult reference = std::move(compacted).value();
  transcript += std::to_string(seeds.size()) + " seeds, " + std::to_string(layer->indices.size()) +
                " sampled indices, " + std::to_string(reference.unique_nodes.size()) +
                " unique nodes (faultline's first-appearance reference)\n";

  std::optional<ObservedError> first_mismatch;
  for (const Schedule& s : schedules) {
    const UniqueAndCompactResult got = ConcurrentUniqueAndCompact(seeds, layer->indices, algorithm, s.workers, s.order);
    const std::string difference = FirstDifference(reference, got);
    transcript += ScheduleName(s.workers, s.order) + ": " +
                  (difference.empty() ? "equal to the first-appearance reference" : "differs: " + difference) + "\n";
    if (!difference.empty() && !first_mismatch) {
      first_mismatch = ObservedError{
          "OutputMismatch", 0,
          "unique_and_compact (" + ScheduleName(s.workers, s.order) + "): " + difference + " (first appearance)",
          process, "unique_and_compact"};
    }
  }
  if (first_mismatch) {
    return EndedInError(expected, *first_mismatch, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "every schedule gave the reference", transcript)) return *missed;
  return PassedIf(true, "every schedule gives the first-appearance unique nodes and compacted indices", transcript);
}

const std::vector<Schedule> kTwoInterleavings{{2, {0, 1}}, {2, {1, 0}}};
const std::vector<Schedule> kFixedSchedules{{2, {0, 1}}, {2, {1, 0}}, {4, {3, 2, 1, 0}}, {4, {}}};

const bool kRegistered = RegisterFailure(Failure{
    "F11",
    "Unique-and-compact order depends on thread scheduling (DGL 7010 / 7217, also 7831)",
    {
        Reproduces("legacy",
                   "concurrent id map numbering ids in insertion order; worker 0 inserts first, then worker 1 first",
                   OnEveryRuntime(kF11Legacy),
                   [](RuntimeKind, const Signature& s) {
                     return Run(Algorithm::kInsertionOrder, kTwoInterleavings, ExpectSignature{s});
                   }),
        Passes("fixed",
               "smallest position per id (DGL PR 7217) under four schedules: 2 workers both orders, 4 reversed, 4 free",
               [](RuntimeKind) { return Run(Algorithm::kFirstAppearance, kFixedSchedules, ExpectPass{}); }),
        Passes("workaround", "legacy map with one worker (OMP_NUM_THREADS=1)",
               [](RuntimeKind) {
                 return Run(Algorithm::kInsertionOrder, {{1, {}}}, ExpectPass{});
               }),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
