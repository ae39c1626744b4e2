// Checks the data loader: batches, bit-identical minibatches for every
// num_workers, start method and sampler_threads, copied out or viewed where
// they lie (a held view holds its slot), and clean failure when a worker
// dies or cannot write its result.
#include "reference/loader/data_loader.h"
#include "reference/loader/item_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <thread>

#include "reference/base/status_matchers.h"
#include "reference/graph/csc_graph.h"
#include "reference/graph/generators.h"
#include "reference/loader/fault_injection.h"
#include "reference/loader/loader_test_support.h"
#include "reference/loader/minibatch.h"
#include "reference/runtime/test_runtime.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace {

LoaderOptions Options(int workers, StartMethod method) { return LoaderTestOptions(workers, method); }

enum class Take { kNext, kNextView };

// Every minibatch of a loader, taken with Next, or with NextView (each view
// copied out, then dropped).
std::vector<MiniBatch> Drain(const LoaderOptions& options, Take take = Take::kNext) {
  auto loader = DataLoader::Create(options);
  FL_EXPECT_OK(loader);
  std::vector<MiniBatch> out;
  for (;;) {
    if (take == Take::kNextView) {
      auto view = (*loader)->NextView();
      FL_EXPECT_OK(view);
      if (!view.ok() || !view->has_value()) break;
      out.push_back((*view)->ToMiniBatch());
      continue;
    }
    auto next = (*loader)->Next();
    FL_EXPECT_OK(next);
    if (!next.ok() || !next->has_value()) break;
    out.push_back(std::move(**next));
  }
  return out;
}

TEST(ItemSamplerTest, BatchesCoverEveryItemOnceAndShuffleDependsOnlyOnTheSeed) {
  auto plain = MakeBatches({10, 4, false, false, 0});
  FL_ASSERT_OK(plain);
  EXPECT_EQ(*plain, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(MakeBatches({10, 4, false, true, 0})->size(), 2u);
  auto a = MakeBatches({100, 7, true, false, 5}), b = MakeBatches({100, 7, true, false, 5});
  auto c = MakeBatches({100, 7, true, false, 6});
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  std::vector<int64_t> all;
  for (const auto& batch : *a) all.insert(all.end(), batch.begin(), batch.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(all[i], i);
  EXPECT_EQ(MakeBatches({10, 0, false, false, 0}).status().message(), "batch_size is 0; expected >= 1");
}

// Workers write each minibatch into shared memory while they sample it, in
// chunks that depend on sampler_threads; what the main process copies out
// or views is the inline loader's minibatch all the same.
TEST(DataLoaderTest, MinibatchesAreIdenticalForEveryWorkerCountAndStartMethod) {
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  ASSERT_EQ(baseline.size(), 13u);  // 400 items in batches of 32
  EXPECT_EQ(baseline[0].feature_dim, 8);
  for (Take take : {Take::kNext, Take::kNextView}) {
    for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
      for (int workers : {0, 1, 2, 3}) {
        for (int threads : {1, 3}) {
          SCOPED_TRACE(std::string(take == Take::kNext ? "Next" : "NextView") + ", " + StartMethodName(method) + " x" +
                       std::to_string(workers) + ", " + std::to_string(threads) + " sampler threads");
          LoaderOptions options = Options(workers, method);
          options.sampler_threads = threads;
          std::vector<MiniBatch> got = Drain(options, take);
          ASSERT_EQ(got.size(), baseline.size());
          for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == baseline[i]) << "minibatch " << i;
        }
      }
    }
  }
  EXPECT_TRUE(NoLeftoverSegments());
}

// The fixture's feature value at (node, column): LoaderTestDatasetDir writes
// 8 columns per node, row-major, the i-th value being 0.25 * i.
constexpr int64_t kFixtureFeatureDim = 8;
float FixtureFeature(int64_t node, int64_t column) {
  return static_cast<float>(node * kFixtureFeatureDim + column) * 0.25f;
}

// The test above compares every loader with the inline one; this one checks
// the inline loader itself, so that a bug both paths share (one random
// stream for every minibatch, wrong seeds, wrong feature rows) cannot pass
// as agreement. Each minibatch is rebuilt from its documented parts: the
// seeds from the item sampler over every node (MakeBatches, shuffled by the
// loader seed), the layers from SampleMultiLayer with the minibatch's own
// random stream (LoaderRngSeed), and the features from the fixture's
// formula for the last layer's unique nodes.
TEST(DataLoaderTest, InlineMinibatchesAreTheOnesRebuiltFromTheirParts) {
  const LoaderOptions options = Options(0, StartMethod::kFork);
  Result<CscGraph> graph = CscGraph::Load(options.graph_dir);
  FL_ASSERT_OK(graph);
  Result<std::vector<std::vector<int64_t>>> seeds =
      MakeBatches({graph->num_nodes(), options.batch_size, options.shuffle, options.drop_last, options.seed});
  FL_ASSERT_OK(seeds);
  const std::vector<MiniBatch> got = Drain(options);
  ASSERT_EQ(got.size(), seeds->size());
  std::set<uint64_t> streams;  // one per minibatch, none shared
  for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
    SCOPED_TRACE("minibatch " + std::to_string(i));
    const MiniBatch& batch = got[i];
    const std::vector<int64_t>& batch_seeds = (*seeds)[i];
    EXPECT_EQ(batch.index, i);
    EXPECT_EQ(batch.seeds, batch_seeds);
    const uint64_t stream = LoaderRngSeed(options.seed, i);
    EXPECT_TRUE(streams.insert(stream).second) << "an earlier minibatch has random stream " << stream;
    const SamplingOptions sampling{options.replace, options.weighted, stream, options.sampler_threads};
    Result<std::vector<SampledLayer>> layers = SampleMultiLayer(*graph, batch_seeds, options.fanouts, sampling);
    FL_ASSERT_OK(layers);
    ASSERT_EQ(batch.layers.size(), layers->size());
    for (size_t k = 0; k < layers->size(); ++k) {
      SCOPED_TRACE("layer " + std::to_string(k));
      const SampledLayer &have = batch.layers[k], &want = (*layers)[k];
      EXPECT_EQ(have.subgraph.seeds, want.subgraph.seeds);
      EXPECT_EQ(have.subgraph.indptr, want.subgraph.indptr);
      EXPECT_EQ(have.subgraph.indices, want.subgraph.indices);
      EXPECT_EQ(have.subgraph.original_edge_ids, want.subgraph.original_edge_ids);
      EXPECT_EQ(have.unique_nodes, want.unique_nodes);
      EXPECT_EQ(have.compacted_indices, want.compacted_indices);
    }
    std::vector<float> rows;
    for (int64_t node : layers->back().unique_nodes) {
      for (int64_t column = 0; column < kFixtureFeatureDim; ++column) rows.push_back(FixtureFeature(node, column));
    }
    EXPECT_EQ(batch.feature_dim, kFixtureFeatureDim);
    EXPECT_EQ(batch.features, rows);
  }
}

// Takes the first 2 * kPrefetchPerWorker views of a two-worker loader,
// which hold every slot.
std::vector<std::optional<MiniBatchView>> HoldEverySlot(DataLoader& loader) {
  std::vector<std::optional<MiniBatchView>> held;
  for (int i = 0; i < 2 * kPrefetchPerWorker; ++i) {
    auto view = loader.NextView();
    EXPECT_TRUE(view.ok() && view->has_value()) << view.status();
    if (!view.ok() || !view->has_value()) break;
    held.push_back(std::move(*view));
  }
  return held;
}

// A view holds its worker's segment slot: the minibatch due in a held slot
// is an error that names the view to drop, and the loader goes on once it
// is dropped; held views keep their minibatch while the workers go on, and
// after the loader's end.
TEST(DataLoaderTest, AHeldViewHoldsItsSlotAndTheLoaderSaysWhichToDrop) {
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    auto loader = DataLoader::Create(Options(2, method));
    FL_ASSERT_OK(loader);
    std::vector<std::optional<MiniBatchView>> held = HoldEverySlot(**loader);
    ASSERT_EQ(held.size(), 2u * kPrefetchPerWorker);
    auto blocked = (*loader)->NextView();
    EXPECT_EQ(blocked.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(blocked.status().message(),
              "minibatch 4 is due in worker 0's segment slot 0, which the view of minibatch 0 still holds; drop that "
              "view first (a slot is reused every 2 x num_workers minibatches)");
    EXPECT_FALSE((*loader)->failure().has_value());
    MiniBatchView copy_of_first = *held[0];  // a copy holds the slot too
    held[0].reset();
    EXPECT_EQ((*loader)->NextView().status().code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(copy_of_first.ToMiniBatch() == baseline[0]);
    copy_of_first = MiniBatchView();
    auto fourth = (*loader)->NextView();
    ASSERT_TRUE(fourth.ok() && fourth->has_value()) << fourth.status();
    EXPECT_TRUE((*fourth)->ToMiniBatch() == baseline[4]);
    fourth->reset();
    for (int i = 1; i < 2 * kPrefetchPerWorker; ++i) {
      EXPECT_TRUE(held[i]->ToMiniBatch() == baseline[i]) << "minibatch " << i;
    }
    held.clear();
    for (size_t i = 5; i < baseline.size(); ++i) {
      auto view = (*loader)->NextView();
      ASSERT_TRUE(view.ok() && view->has_value()) << view.status();
      if (i + 1 < baseline.size()) continue;
      MiniBatchView last = std::move(**view);
      loader->reset();                                 // the workers end, and the parent's descriptors go
      EXPECT_TRUE(last.ToMiniBatch() == baseline[i]);  // still mapped
      // The view holds the mapping of its slot, which the leak check sees
      // (and so would see any descriptor or mapping left behind) ...
      const ::testing::AssertionResult held_by_view = NoLeftoverSegments();
      EXPECT_FALSE(held_by_view);
      EXPECT_NE(std::string(held_by_view.message()).find("mapped: /memfd:"), std::string::npos)
          << held_by_view.message();
      last = MiniBatchView();
      EXPECT_TRUE(NoLeftoverSegments());  // ... until it is dropped
    }
  }
}

// A view may be dropped on any thread (a consumer's): it frees its slot.
TEST(DataLoaderTest, AViewDroppedOnAnotherThreadFreesItsSlot) {
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  auto loader = DataLoader::Create(Options(2, StartMethod::kFork));
  FL_ASSERT_OK(loader);
  std::vector<std::optional<MiniBatchView>> held = HoldEverySlot(**loader);
  ASSERT_EQ(held.size(), 2u * kPrefetchPerWorker);
  std::thread consumer([&] { held[0].reset(); });
  consumer.join();
  auto next = (*loader)->NextView();
  ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
  EXPECT_TRUE((*next)->ToMiniBatch() == baseline[4]);
}

// A worker that dies while views are held: the error names it, the views
// keep their minibatches, and once they and the loader are gone nothing
// of the segments is left.
TEST(DataLoaderTest, ViewsHeldWhenAWorkerDiesKeepTheirMinibatches) {
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    auto loader = DataLoader::Create(Options(2, method));
    FL_ASSERT_OK(loader);
    const std::vector<pid_t> pids = (*loader)->worker_pids();
    std::vector<std::optional<MiniBatchView>> held = HoldEverySlot(**loader);
    ASSERT_EQ(held.size(), 2u * kPrefetchPerWorker);
    ASSERT_EQ(kill(pids[0], SIGKILL), 0);
    held[0].reset();  // minibatch 4, due in its slot, goes to the dead worker 0
    auto next = (*loader)->NextView();
    EXPECT_EQ(next.status().code(), StatusCode::kChildFailed);
    EXPECT_NE(next.status().message().find("worker 0 (pid " + std::to_string(pids[0]) +
                                           ") was killed by signal 9 (Killed) while producing minibatch 4"),
              std::string::npos)
        << next.status();
    EXPECT_FALSE(Unreaped(pids[1]));
    for (size_t i = 1; i < held.size(); ++i) EXPECT_TRUE(held[i]->ToMiniBatch() == baseline[i]) << "minibatch " << i;
    EXPECT_EQ((*loader)->NextView().status().code(), StatusCode::kFailedPrecondition);
    held.clear();
    loader->reset();
    EXPECT_TRUE(NoLeftoverSegments());
  }
}

// A dataset without features.npy: workers give the inline minibatches,
// with no feature values.
TEST(DataLoaderTest, ADatasetWithoutFeaturesGivesTheSameMinibatchesThroughWorkers) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  // A folder of its own on every run (--gtest_repeat runs this in the same process).
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/loader_no_features_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr) << std::strerror(errno);
  Result<CscGraph> graph = GeneratePowerLaw(300, 3000, 5, /*weighted=*/false);
  FL_ASSERT_OK(graph);
  FL_ASSERT_OK(graph->Save(dir));
  LoaderOptions options = Options(0, StartMethod::kFork);
  options.graph_dir = dir;
  const std::vector<MiniBatch> inline_batches = Drain(options);
  ASSERT_FALSE(inline_batches.empty());
  EXPECT_EQ(inline_batches[0].feature_dim, 0);
  EXPECT_TRUE(inline_batches[0].features.empty());
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    options.num_workers = 2;
    options.start_method = method;
    const std::vector<MiniBatch> got = Drain(options);
    ASSERT_EQ(got.size(), inline_batches.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == inline_batches[i]) << "minibatch " << i;
  }
  EXPECT_TRUE(NoLeftoverSegments());
}

// What a child process reported, and how it ended.
struct ChildReport {
  std::string text;
  int status = 0;  // waitpid's
};

// Forks a child that runs `body` (the child's side, which reports by
// Report(); the child then exits 0, unless it ended itself first) and
// returns what it reported and how it ended.
void Report(int fd, const std::string& text) { (void)!write(fd, text.data(), text.size()); }
ChildReport RunInChild(const std::function<void(int report_fd)>& body) {
  int pipe_fds[2];
  ChildReport out;
  if (pipe(pipe_fds) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return out;
  }
  const pid_t child = fork();
  if (child == 0) {
    close(pipe_fds[0]);
    body(pipe_fds[1]);
    _exit(0);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) out.text.append(buffer, static_cast<size_t>(n));
  close(pipe_fds[0]);
  if (child < 0 || waitpid(child, &out.status, 0) != child) ADD_FAILURE() << "fork or waitpid failed";
  return out;
}

// A worker that cannot grow its segment (here a file size limit, as a full
// /dev/shm would) fails in write_shared_memory with the system's reason,
// although the write failed while it was sampling. Run in a child process:
// the limit must not reach this test's own files. Under ThreadSanitizer
// only forked workers: an exec'd TSan runtime dies of SIGBUS on its own
// memory under a 4 KiB file size limit, before the worker's code runs.
#if defined(__SANITIZE_THREAD__)
constexpr StartMethod kMethodsUnderAFileSizeLimit[] = {StartMethod::kFork};
#else
constexpr StartMethod kMethodsUnderAFileSizeLimit[] = {StartMethod::kFork, StartMethod::kSpawn};
#endif
TEST(DataLoaderTest, AWorkerThatCannotGrowItsSegmentFailsInTheWrite) {
  for (StartMethod method : kMethodsUnderAFileSizeLimit) {
    SCOPED_TRACE(StartMethodName(method));
    LoaderTestDatasetDir();  // written before the limit
    const ChildReport child = RunInChild([method](int report_fd) {
      signal(SIGXFSZ, SIG_IGN);  // past the limit, fallocate fails with EFBIG instead
      // One page: a segment's first size, but below a minibatch's first layer.
      const rlimit limit{4096, 4096};
      setrlimit(RLIMIT_FSIZE, &limit);
      std::string report;
      auto loader = DataLoader::Create(Options(1, method));
      if (!loader.ok()) {
        report = "create: " + loader.status().ToString();
      } else {
        auto next = (*loader)->Next();
        const auto& failure = (*loader)->failure();
        report = next.ok() ? "no error" : (failure ? failure->step : "no failure") + "|" + next.status().message();
        loader->reset();
        if (!NoLeftoverSegments()) report += "|leaked segments";
      }
      Report(report_fd, report);
    });
    const std::string& report = child.text;
    EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.status;
    EXPECT_EQ(report.substr(0, report.find('|')), "write_shared_memory") << report;
    EXPECT_NE(report.find("failed in write_shared_memory on minibatch 0"), std::string::npos) << report;
    EXPECT_NE(report.find("of shared memory segment"), std::string::npos) << report;
    EXPECT_LT(report.find(": layer "), report.find("reserving")) << report;  // it failed while sampling
    EXPECT_NE(report.find("File too large"), std::string::npos) << report;
    EXPECT_EQ(report.find("leaked"), std::string::npos) << report;
  }
}

// An application that ignores SIGCHLD (the kernel then reaps children
// itself) or reaps every child on another thread: a worker that ends is
// still named with its pid and minibatch, and its pid is never signalled
// once waitpid said it is gone (it may belong to another process by then).
// Before, Next() failed with a bare "waitpid failed: No child processes".
// Run in a child process: the disposition must not reach this test.
TEST(DataLoaderTest, AWorkerReapedElsewhereIsNamed) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    LoaderTestDatasetDir();  // written by this process, before the child
    const ChildReport child = RunInChild([method](int report_fd) {
      signal(SIGCHLD, SIG_IGN);
      ScopedInjection inject("after_task:exit3:1");
      auto loader = DataLoader::Create(Options(2, method));
      if (!loader.ok()) return Report(report_fd, "create: " + loader.status().ToString());
      const std::vector<pid_t> pids = (*loader)->worker_pids();
      auto first = (*loader)->Next();
      if (!first.ok()) return Report(report_fd, "minibatch 0: " + first.status().ToString());
      auto second = (*loader)->Next();
      const std::string who = "worker 1 (pid " + std::to_string(pids[1]) + ")";
      std::string text = second.status().ToString();
      const size_t at = text.find(who);
      if (at != std::string::npos) text.replace(at, who.size(), "worker 1 (pid P)");
      Report(report_fd, text);
    });
    EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.status;
    EXPECT_EQ(child.text,
              "child_failed: worker 1 (pid P) ended while producing minibatch 1; its exit status was reaped elsewhere "
              "(waitpid: ECHILD; is SIGCHLD ignored, or does another thread wait for all children?)");
  }
}

TEST(DataLoaderTest, AKilledWorkerIsANamedErrorAndNothingLeaks) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    auto loader = DataLoader::Create(Options(2, method));
    FL_ASSERT_OK(loader);
    std::vector<pid_t> pids = (*loader)->worker_pids();
    FL_ASSERT_OK((*loader)->Next());  // minibatch 0 from worker 0
    ASSERT_EQ(kill(pids[1], SIGKILL), 0);
    Status error;
    for (int i = 0; i < 20 && error.ok(); ++i) {
      auto next = (*loader)->Next();
      if (!next.ok()) error = next.status();
    }
    ASSERT_FALSE(error.ok()) << "the killed worker went unnoticed";
    EXPECT_EQ(error.code(), StatusCode::kChildFailed);
    EXPECT_NE(error.message().find("worker 1 (pid " + std::to_string(pids[1]) + ") was killed by signal 9 (Killed)"),
              std::string::npos)
        << error;
    EXPECT_FALSE(Unreaped(pids[0]));
    EXPECT_FALSE(Unreaped(pids[1]));
    EXPECT_TRUE(NoLeftoverSegments());
    EXPECT_EQ((*loader)->Next().status().code(), StatusCode::kFailedPrecondition);
  }
}

// An exception in a worker (std::bad_alloc from its sampler, thrown in the
// worker's thread or in a sampler thread and rethrown there) is the error
// of the step it escaped, naming the worker, its pid and the minibatch.
// Before, in a forked worker it unwound into the worker's copy of this
// test: ~DataLoader ran there and killed worker 0, which the parent then
// blamed, and gtest's handler went on running the next tests in the worker.
TEST(DataLoaderTest, AnExceptionInAWorkerIsItsNamedErrorAndNoOtherWorkerIsBlamed) {
  ScopedInjection inject("mid_write:throw:1");
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    for (int threads : {1, 3}) {
      SCOPED_TRACE(std::string(StartMethodName(method)) + ", " + std::to_string(threads) + " sampler threads");
      LoaderOptions options = Options(2, method);
      options.sampler_threads = threads;
      auto loader = DataLoader::Create(options);
      FL_ASSERT_OK(loader);
      const std::vector<pid_t> pids = (*loader)->worker_pids();
      auto first = (*loader)->Next();  // worker 0's, which nothing disturbed
      ASSERT_TRUE(first.ok() && first->has_value()) << first.status();
      auto second = (*loader)->Next();
      EXPECT_EQ(second.status().code(), StatusCode::kInternal);
      EXPECT_EQ(second.status().message(), "worker 1 (pid " + std::to_string(pids[1]) +
                                               ") failed in sample_neighbors on minibatch 1: uncaught exception "
                                               "std::bad_alloc: std::bad_alloc");
      ASSERT_TRUE((*loader)->failure().has_value());
      EXPECT_EQ((*loader)->failure()->worker, 1);
      EXPECT_EQ((*loader)->failure()->step, "sample_neighbors");
      EXPECT_EQ((*loader)->failure()->minibatch, 1);
    }
  }
}

// The shared memory segments process `pid` maps ("/memfd:NAME (deleted)").
std::set<std::string> MappedSegments(pid_t pid) {
  Result<std::vector<std::string>> mapped = MappedFiles("/proc/" + std::to_string(pid));
  FL_EXPECT_OK(mapped);
  std::set<std::string> segments;
  for (const std::string& file : mapped.ok() ? *mapped : std::vector<std::string>()) {
    if (file.rfind("/memfd:", 0) == 0) segments.insert(file);
  }
  return segments;
}

// What /proc/PID/fd links to, one entry per descriptor.
std::vector<std::string> TargetsOf(pid_t pid) {
  Result<std::vector<DescriptorTarget>> descriptors = DescriptorTargets("/proc/" + std::to_string(pid));
  FL_EXPECT_OK(descriptors);
  std::vector<std::string> targets;
  for (const DescriptorTarget& d : descriptors.ok() ? *descriptors : std::vector<DescriptorTarget>()) {
    targets.push_back(d.target);
  }
  return targets;
}

// Two loaders with forked workers at once (a training and a validation
// loader): each worker holds its own slots' segments and its own two
// sockets, and none of another worker's or another loader's, which would
// keep that loader's unlinked slots allocated for as long as it lives.
TEST(DataLoaderTest, AForkedWorkerHoldsOnlyItsOwnSlotsAndSockets) {
  std::vector<std::string> before;  // the test process's own sockets, which every fork inherits
  for (const std::string& target : TargetsOf(getpid())) {
    if (target.rfind("socket:", 0) == 0) before.push_back(target);
  }
  auto first = DataLoader::Create(Options(2, StartMethod::kFork));
  FL_ASSERT_OK(first);
  // A view of the first loader held while the second starts: its slot is
  // mapped in this process when the second loader's workers are forked.
  auto held = (*first)->NextView();
  ASSERT_TRUE(held.ok() && held->has_value()) << held.status();
  auto second = DataLoader::Create(Options(2, StartMethod::kFork));
  FL_ASSERT_OK(second);
  for (DataLoader* loader : {first->get(), second->get()}) {
    // One minibatch from each worker: both have started (and closed what
    // was not theirs) before they answered.
    for (int batch = 0; batch < 2; ++batch) FL_ASSERT_OK(loader->Next());
    const std::vector<pid_t> pids = loader->worker_pids();
    for (size_t w = 0; w < pids.size(); ++w) {
      SCOPED_TRACE("worker " + std::to_string(w) + " (pid " + std::to_string(pids[w]) + ")");
      std::set<std::string> own;  // its slots, as its descriptors name them
      int sockets = 0;
      for (const std::string& target : TargetsOf(pids[w])) {
        if (target.rfind("/memfd:", 0) == 0) {
          own.insert(target);
          EXPECT_NE(target.find("-w" + std::to_string(w) + "-s"), std::string::npos) << target;
        }
        if (target.rfind("socket:", 0) == 0 && std::find(before.begin(), before.end(), target) == before.end()) {
          ++sockets;
        }
      }
      EXPECT_EQ(own.size(), static_cast<size_t>(kPrefetchPerWorker));
      EXPECT_EQ(sockets, 2);  // its task and result sockets
      for (const std::string& mapped : MappedSegments(pids[w])) {
        EXPECT_EQ(own.count(mapped), 1u) << "it maps a segment that is not its own: " << mapped;
      }
    }
  }
  held->reset();
  for (auto* loader : {&first, &second}) {
    while (true) {  // both loaders run to the end
      auto next = (**loader)->Next();
      FL_ASSERT_OK(next);
      if (!next->has_value()) break;
    }
  }
}

// Destroying a loader mid-epoch stops its workers, and the main process
// holds nothing of its segments afterwards. While it runs, with minibatches
// waiting in slots the parent has not read, every slot is an unnamed
// memfd (never a name in /dev/shm, which a process killed between
// shm_open and shm_unlink would have left): 2 per worker.
TEST(DataLoaderTest, DestroyingALoaderMidEpochStopsItsWorkersAndItsSegmentsNeverHadANameToLeave) {
  std::vector<pid_t> pids;
  {
    auto loader = DataLoader::Create(Options(2, StartMethod::kFork));
    FL_ASSERT_OK(loader);
    pids = (*loader)->worker_pids();
    FL_ASSERT_OK((*loader)->Next());  // minibatches 1-4 prefetched or on their way
    Result<std::vector<std::string>> held = LeakedSegments();
    FL_ASSERT_OK(held);
    size_t descriptors = 0;
    for (const std::string& entry : *held) {
      if (entry.rfind("fd ", 0) != 0) continue;  // its mappings
      ++descriptors;
      EXPECT_NE(entry.find(": /memfd:"), std::string::npos) << entry;
    }
    EXPECT_EQ(descriptors, 2u * kPrefetchPerWorker);
  }
  for (pid_t pid : pids) EXPECT_FALSE(Unreaped(pid));
  EXPECT_TRUE(NoLeftoverSegments()) << "after destroying the loader";
}

// Blocks until process `pid` (not a child of this one) has ended; false if
// it is still there after 20 s.
bool AwaitEnd(pid_t pid) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // already gone and reaped
  pollfd pfd{fd, POLLIN, 0};
  const bool ended = poll(&pfd, 1, 20000) == 1;
  close(fd);
  return ended;
}

// The main process may die however it dies (here SIGKILL, mid-epoch, with
// minibatches prefetched in slots it has not read yet): no worker lives on
// (PR_SET_PDEATHSIG), and with them goes the last holder of every segment
// (unnamed memfds, which nothing else can reach).
TEST(DataLoaderTest, AMainProcessKilledMidEpochLeavesNoSegmentAndNoWorker) {
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    LoaderTestDatasetDir();  // written by this process, before the child
    const ChildReport child = RunInChild([method](int report_fd) {
      auto loader = DataLoader::Create(Options(2, method));
      if (!loader.ok() || !(*loader)->Next().ok()) return Report(report_fd, "no loader");
      // Minibatch 0 taken; 1-3 prefetched, 4 on its way: the workers write
      // slots the parent has not read. Then the parent dies at once.
      std::string text = LoaderSegmentPrefix();
      for (pid_t pid : (*loader)->worker_pids()) text += " " + std::to_string(pid);
      Report(report_fd, text);
      raise(SIGKILL);
    });
    const std::string& text = child.text;
    ASSERT_TRUE(WIFSIGNALED(child.status) && WTERMSIG(child.status) == SIGKILL)
        << "the child did not get to its SIGKILL: " << child.status << " " << text;
    const std::string prefix = text.substr(0, text.find(' '));
    ASSERT_EQ(prefix.rfind("/faultline-", 0), 0u) << text;
    for (size_t at = text.find(' '); at != std::string::npos; at = text.find(' ', at + 1)) {
      const pid_t worker = static_cast<pid_t>(std::atoi(text.c_str() + at + 1));
      EXPECT_TRUE(AwaitEnd(worker)) << "worker " << worker << " outlived its main process";
    }
  }
}

TEST(DataLoaderTest, TheLeakCheckFailsLoudlyWhenItCannotLook) {
  Result<std::vector<std::string>> held = LeakedSegments("/nonexistent/proc");
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.status().message(),
            "cannot list /nonexistent/proc/fd to look for leaked segments: No such file or directory");
}

TEST(DataLoaderTest, BadOptionsAreNamed) {
  // At most kMaxWorkers: 100000 used to fork until socketpair failed
  // ("socketpair failed", no errno, no worker).
  for (int workers : {-1, kMaxWorkers + 1, 100000}) {
    LoaderOptions o = Options(workers, StartMethod::kFork);
    EXPECT_EQ(DataLoader::Create(o).status().message(),
              "num_workers is " + std::to_string(workers) + "; expected 0..1024 (0: no worker processes)");
  }
  for (int threads : {0, 1025}) {
    LoaderOptions o = Options(0, StartMethod::kFork);
    o.sampler_threads = threads;
    EXPECT_EQ(DataLoader::Create(o).status().message(),
              "sampler_threads is " + std::to_string(threads) + "; expected 1..1024");
  }
  LoaderOptions o = Options(0, StartMethod::kFork);
  o.graph_dir = "/nonexistent/graph";
  EXPECT_EQ(DataLoader::Create(o).status().message(),
            "graph_dir: loading a graph from '/nonexistent/graph': cannot open '/nonexistent/graph/indptr.npy': No "
            "such file or directory");
  // Items are node ids: -1 (every node) or at most one per node.
  auto graph = CscGraph::Load(LoaderTestDatasetDir());
  FL_ASSERT_OK(graph);
  const int64_t nodes = graph->num_nodes();
  for (int64_t items : {int64_t{-2}, nodes + 1, std::numeric_limits<int64_t>::max()}) {
    o = Options(2, StartMethod::kFork);
    o.num_items = items;
    EXPECT_EQ(DataLoader::Create(o).status().message(), "num_items is " + std::to_string(items) +
                                                            "; expected -1 (every node) or 0.." +
                                                            std::to_string(nodes) + " (the graph's nodes)");
  }
  o.num_items = nodes;
  FL_EXPECT_OK(DataLoader::Create(o));
  // A path that is not UTF-8 cannot reach a spawned worker (its options go
  // as JSON); a forked one needs no encoding, so its error is the load's.
  o = Options(2, StartMethod::kSpawn);
  o.graph_dir = LoaderTestDatasetDir() + "/gr\xe4ph";
  EXPECT_EQ(DataLoader::Create(o).status().message(),
            "graph_dir is not valid UTF-8 ('" + o.graph_dir +
                "'); spawned workers receive the options as JSON, which cannot carry it: use start_method fork, or "
                "a UTF-8 path");
  o.start_method = StartMethod::kFork;
  auto unreadable = DataLoader::Create(o);
  ASSERT_FALSE(unreadable.ok());
  EXPECT_NE(unreadable.status().message().find(o.graph_dir), std::string::npos) << unreadable.status();
  // Fanouts are checked by Create, before any worker starts: the first
  // minibatch's sampling used to report a bad one as worker 0's failure.
  const std::pair<std::vector<int64_t>, std::string> bad_fanouts[] = {
      {{}, "fanouts is empty; expected one fanout per layer"},
      {{5, -3}, "fanouts[1] is -3; expected -1 (all neighbours) or 0..2147483647"},
      {{int64_t{2147483648}}, "fanouts[0] is 2147483648; expected -1 (all neighbours) or 0..2147483647"},
  };
  for (const auto& [fanouts, message] : bad_fanouts) {
    o = Options(2, StartMethod::kFork);
    o.fanouts = fanouts;
    EXPECT_EQ(DataLoader::Create(o).status().message(), message);
  }
  o = Options(0, StartMethod::kFork);
  o.fanouts = {-1, 0};  // every neighbour, then none
  auto loader = DataLoader::Create(o);
  FL_ASSERT_OK(loader);
  FL_EXPECT_OK((*loader)->Next());
  // The fixture has no weights.npy.
  o = Options(2, StartMethod::kFork);
  o.weighted = true;
  EXPECT_EQ(DataLoader::Create(o).status().message(),
            "weighted is true but the graph in " + o.graph_dir +
                " has no edge weights (weights.npy); expected weighted = false for it");
}

// A worker that cannot be started is named, with the call that failed and
// why: here the process has no descriptor left for worker 0's sockets,
// after its two segments (RLIMIT_NOFILE set two above the highest open
// descriptor, every lower one in use). Before: "socketpair failed", with
// no errno and no worker. Run in a child process: the limit must not reach
// this test.
TEST(DataLoaderTest, AWorkerThatCannotStartIsNamedWithTheFailedCall) {
  LoaderTestDatasetDir();  // written by this process, before the child
  LoaderSegmentPrefix();   // its nonce drawn before the limit
  const ChildReport child = RunInChild([](int report_fd) {
    std::vector<int> fillers;  // every free descriptor below the highest open one
    int highest = 0;
    DIR* dir = opendir("/proc/self/fd");
    while (dirent* e = readdir(dir)) highest = std::max(highest, std::atoi(e->d_name));
    closedir(dir);
    for (;;) {
      const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (fd < 0) return Report(report_fd, std::string("open /dev/null: ") + std::strerror(errno));
      if (fd > highest) {
        close(fd);
        break;
      }
      fillers.push_back(fd);
    }
    rlimit old{};
    getrlimit(RLIMIT_NOFILE, &old);
    const rlimit lowered{static_cast<rlim_t>(highest) + 3, old.rlim_max};  // room for 2 more
    if (setrlimit(RLIMIT_NOFILE, &lowered) != 0) return Report(report_fd, "setrlimit failed");
    auto loader = DataLoader::Create(Options(2, StartMethod::kFork));
    Report(report_fd, std::to_string(lowered.rlim_cur) + "|" +
                          (loader.ok() ? std::string("created") : loader.status().ToString()));
  });
  EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.status;
  const std::string limit = child.text.substr(0, child.text.find('|'));
  EXPECT_EQ(child.text.substr(child.text.find('|') + 1),
            "unavailable: starting worker 0 of 2: socketpair failed: Too many open files (each worker holds 6 of "
            "this process's descriptors; RLIMIT_NOFILE allows " +
                limit + ": raise it (ulimit -n) or use fewer workers)")
      << child.text;
}

// The device modes run on simcuda, or on real CUDA in the gpu-tagged target.
class DeviceModesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runtime = DeviceRuntimeUnderTest();
    FL_ASSERT_OK(runtime);
    runtime_ = *runtime;
  }
  LoaderOptions DeviceOptions(LoaderMode mode, int workers, StartMethod method) {
    LoaderOptions o = Options(workers, method);
    o.mode = mode;
    o.runtime = runtime_->kind();
    return o;
  }
  DeviceRuntime* runtime_ = nullptr;
};

TEST_F(DeviceModesTest, EveryModeGivesTheCpuMinibatchesWithFeaturesOnTheDevice) {
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  struct Case {
    LoaderMode mode;
    int workers;
    StartMethod method;
  };
  // The parent uses the device from the first case on, so the forked
  // cpu-cuda workers below run in a CUDA-initialized parent's children.
  for (Case c :
       {Case{LoaderMode::kCudaCuda, 0, StartMethod::kFork}, Case{LoaderMode::kPinnedCuda, 0, StartMethod::kFork},
        Case{LoaderMode::kCpuCuda, 0, StartMethod::kFork}, Case{LoaderMode::kCpuCuda, 2, StartMethod::kFork},
        Case{LoaderMode::kCpuCuda, 2, StartMethod::kSpawn}}) {
    SCOPED_TRACE(std::string(LoaderModeName(c.mode)) + " x" + std::to_string(c.workers) + " " +
                 StartMethodName(c.method));
    std::vector<MiniBatch> got = Drain(DeviceOptions(c.mode, c.workers, c.method));
    std::vector<MiniBatch> viewed = Drain(DeviceOptions(c.mode, c.workers, c.method), Take::kNextView);
    got.insert(got.end(), viewed.begin(), viewed.end());
    ASSERT_EQ(got.size(), 2 * baseline.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i < baseline.size() ? "Next" : "NextView");
      const MiniBatch& want = baseline[i % baseline.size()];
      EXPECT_TRUE(got[i] == want) << "minibatch " << want.index;
      ASSERT_EQ(got[i].features_on_device.device(), Device::Cuda(0));
      auto back = got[i].features_on_device.Cpu();
      FL_ASSERT_OK(back);
      EXPECT_EQ(*back->ToVector<float>(), want.features) << "minibatch " << want.index;
    }
  }
  EXPECT_TRUE(NoLeftoverSegments());
}

// A device mode's minibatch waits for the device twice: once to sample
// (SampleMultiLayerKeptOnDevice: each hop fits the workspace's bound, so
// only the counts that size the layers are read), and once to read back
// the layers, the features and their id check's verdict, all queued before
// it (the check and gather of the last layer's unique nodes where they lie:
// nothing is uploaded for them; the features copied into pinned memory).
// Once the workspace holds a minibatch's sizes, the one device allocation a
// minibatch makes is its own feature rows, which its consumer keeps: the
// id check allocates nothing.
TEST_F(DeviceModesTest, ADeviceMinibatchGathersItsFeaturesFromTheNodesWhereTheyLie) {
  for (LoaderMode mode : {LoaderMode::kCudaCuda, LoaderMode::kPinnedCuda}) {
    SCOPED_TRACE(LoaderModeName(mode));
    const LoaderOptions o = DeviceOptions(mode, 0, StartMethod::kFork);
    auto loader = DataLoader::Create(o);
    FL_ASSERT_OK(loader);
    auto first = (*loader)->Next();  // the workspace's buffers are allocated here
    FL_ASSERT_OK(first);
    std::vector<uint64_t> alloc_calls;  // per later minibatch
    for (;;) {
      const uint64_t waits = runtime_->host_waits(), allocs = runtime_->device_alloc_calls();
      auto next = (*loader)->Next();
      FL_ASSERT_OK(next);
      if (!next->has_value()) break;
      EXPECT_GT((*next)->feature_dim, 0);
      EXPECT_EQ(runtime_->host_waits() - waits, 2u) << "minibatch " << (*next)->index;
      alloc_calls.push_back(runtime_->device_alloc_calls() - allocs);
    }
    ASSERT_FALSE(alloc_calls.empty());
    EXPECT_EQ(*std::min_element(alloc_calls.begin(), alloc_calls.end()), 1u) << testing::PrintToString(alloc_calls);
  }
}

TEST_F(DeviceModesTest, FixedLoaderRefusesWorkersForDeviceSamplingAndSaysWhatToUse) {
  for (LoaderMode mode : {LoaderMode::kPinnedCuda, LoaderMode::kCudaCuda}) {
    auto loader = DataLoader::Create(DeviceOptions(mode, 2, StartMethod::kSpawn));
    ASSERT_FALSE(loader.ok());
    EXPECT_EQ(loader.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(loader.status().message(),
              "num_workers is 2 with mode " + std::string(LoaderModeName(mode)) +
                  "; expected 0: device sampling cannot run in worker processes (a forked worker cannot use the "
                  "parent's CUDA context, and pinned memory can only be unpinned by the process that pinned it). "
                  "Use num_workers = 0 with " +
                  LoaderModeName(mode) +
                  ", or mode cpu-cuda to sample in workers and copy minibatches to the device in the main process");
  }
  LoaderOptions cpu_runtime = DeviceOptions(LoaderMode::kCpuCuda, 0, StartMethod::kFork);
  cpu_runtime.runtime = RuntimeKind::kCpu;
  EXPECT_EQ(DataLoader::Create(cpu_runtime).status().message(),
            "mode is cpu-cuda but runtime is cpu; expected simcuda or cuda for a mode that uses a device");
}

TEST_F(DeviceModesTest, LegacyPinHandlingFailsInTheWorkerOnCudaHostUnregister) {
  FL_ASSERT_OK(runtime_->GetDeviceCount());
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    LoaderOptions o = DeviceOptions(LoaderMode::kPinnedCuda, 2, method);
    o.pin_handling = Behaviour::kLegacy;
    auto loader = DataLoader::Create(o);
    FL_ASSERT_OK(loader);
    std::vector<pid_t> pids = (*loader)->worker_pids();
    auto next = (*loader)->Next();
    ASSERT_FALSE(next.ok());
    ASSERT_TRUE(next.status().cuda_error().has_value()) << next.status();
    EXPECT_EQ(next.status().cuda_error()->api, "cudaHostUnregister");
    EXPECT_EQ(next.status().cuda_error()->code, method == StartMethod::kFork ? 3 : 713) << next.status();
    ASSERT_TRUE((*loader)->failure().has_value());
    EXPECT_EQ((*loader)->failure()->step, "restore_state");
    EXPECT_EQ((*loader)->failure()->Process(), "worker 0 (pid " + std::to_string(pids[0]) + ")");
    for (pid_t pid : pids) EXPECT_FALSE(Unreaped(pid));
    EXPECT_TRUE(NoLeftoverSegments());
  }
}

// Blocks until child `pid` has exited, without reaping it (the loader reaps).
void AwaitExitWithoutReaping(pid_t pid) {
  siginfo_t info{};
  while (waitid(P_PID, pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
}

// The F2 flake, forced: worker 0 answers minibatch 0 with its restore_state
// error and exits; only then does the parent write worker 0's next task
// (minibatch 2), which fails with EPIPE. The worker's own report must win
// over the broken pipe, whatever the order of events.
TEST_F(DeviceModesTest, AWorkersErrorReportWinsOverTheBrokenPipeOfTheNextTask) {
  FL_ASSERT_OK(runtime_->GetDeviceCount());
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(StartMethodName(method));
    LoaderOptions o = DeviceOptions(LoaderMode::kPinnedCuda, 2, method);
    o.pin_handling = Behaviour::kLegacy;
    bool waited = false;
    o.on_task_write = [&waited](int worker, pid_t pid, int64_t batch) {
      if (worker != 0 || batch != 2) return;
      AwaitExitWithoutReaping(pid);
      waited = true;
    };
    auto loader = DataLoader::Create(o);
    ASSERT_TRUE(waited) << "the parent never wrote minibatch 2 to worker 0";
    FL_ASSERT_OK(loader);
    std::vector<pid_t> pids = (*loader)->worker_pids();
    auto next = (*loader)->Next();
    ASSERT_FALSE(next.ok());
    ASSERT_TRUE(next.status().cuda_error().has_value()) << next.status();
    EXPECT_EQ(next.status().cuda_error()->api, "cudaHostUnregister") << next.status();
    EXPECT_EQ(next.status().message().rfind("worker 0 (pid " + std::to_string(pids[0]) +
                                                ") failed in restore_state on minibatch 0: cudaHostUnregister failed",
                                            0),
              0u)
        << next.status();
    ASSERT_TRUE((*loader)->failure().has_value());
    EXPECT_EQ((*loader)->failure()->step, "restore_state");
    EXPECT_EQ((*loader)->failure()->minibatch, 0);
    EXPECT_EQ((*loader)->failure()->Process(), "worker 0 (pid " + std::to_string(pids[0]) + ")");
    for (pid_t pid : pids) EXPECT_FALSE(Unreaped(pid));
    EXPECT_TRUE(NoLeftoverSegments());
  }
}

TEST_F(DeviceModesTest, LegacyDispatchQueriesPinningInForkedWorkersOfACudaParent) {
  FL_ASSERT_OK(runtime_->GetDeviceCount());  // the parent has touched CUDA
  LoaderOptions o = DeviceOptions(LoaderMode::kCpuCpu, 2, StartMethod::kFork);
  o.dispatch = Behaviour::kLegacy;
  auto loader = DataLoader::Create(o);
  FL_ASSERT_OK(loader);
  auto next = (*loader)->Next();
  ASSERT_FALSE(next.ok());
  ASSERT_TRUE(next.status().cuda_error().has_value()) << next.status();
  EXPECT_EQ(next.status().cuda_error()->name, "cudaErrorInitializationError");
  EXPECT_EQ(next.status().cuda_error()->api, "cudaPointerGetAttributes");
  EXPECT_EQ((*loader)->failure()->step, "sample_neighbors");
  // The same legacy loader inline, and with spawned workers, runs fine.
  const std::vector<MiniBatch> baseline = Drain(Options(0, StartMethod::kFork));
  for (int workers : {0, 2}) {
    o.num_workers = workers;
    o.start_method = StartMethod::kSpawn;
    std::vector<MiniBatch> got = Drain(o);
    ASSERT_EQ(got.size(), baseline.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == baseline[i]) << "minibatch " << i;
  }
}

}  // namespace
}  // namespace faultline
