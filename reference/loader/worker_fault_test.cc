// Fault injection: one worker of two dies (SIGKILL, SIGSEGV, exit(3)) or
// hangs at each step of its life, forked and spawned. Every case must end in
// the error that names the worker, its pid, the fault and the minibatch (a
// case that hangs instead is stopped by Bazel's test timeout); leave no
// process and no descriptor or mapping of a segment in the main process
// (LeakedSegments); and a new loader must work afterwards.
// No case asserts how long it took: timings belong in benchmarks. Prints the
// matrix recorded in docs/reliability.md.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/loader/data_loader.h"
#include "reference/loader/fault_injection.h"
#include "reference/loader/loader_test_support.h"

namespace faultline {
namespace {

using Clock = std::chrono::steady_clock;

// The loader timeout of the cases that test the timeout itself (hang,
// stall, trickle), set (DataLoader::SetTimeout) only when Next() is about to
// wait for the minibatch the fault withholds, so that it times the fault
// and nothing before it: the minibatches before that one come under
// kLongTimeout (the matrix) or none (the protocol tests). The faulty worker
// is worker 0: where the fault comes before its first answer (every hang
// row but after_answer) the timed wait for minibatch 0 also covers its
// start, which ends the same way however slowly it goes (it hangs either
// way); where it comes after (after_answer), its first answer and worker
// 1's minibatch 1 are taken untimed first.
constexpr auto kTimeout = std::chrono::seconds(2);
// Every other case: the fault ends the worker, which the loader sees at
// once. A timeout this long never fires on a healthy worker that is merely
// slow to start (sanitizers, a loaded machine); were the loader to miss the
// death, it would end the case with "produced nothing for 60 s", which the
// expected message rejects.
constexpr auto kLongTimeout = std::chrono::seconds(60);
constexpr int kNumWorkers = 2;

// Worker 1 fails, so that the error must name a worker other than the
// first; a hang is in worker 0 (see kTimeout).
int FaultyWorker(const std::string& action) { return action == "hang" ? 0 : 1; }

// ExpectedOutcome and the matrix's columns know these four process actions.
static_assert(std::size(kProcessActions) == 4, "a new process action needs its outcome and column here");

// What the loader must say about the faulty worker (pid elided), and its
// short form.
struct Expected {
  std::string text;
  std::string cell;
};

Expected ExpectedOutcome(const std::string& action, int64_t minibatch) {
  const std::string tail = " while producing minibatch " + std::to_string(minibatch);
  const std::string mb = " mb" + std::to_string(minibatch);
  if (action == "sigkill") return {"was killed by signal 9 (Killed)" + tail, "signal 9" + mb};
  if (action == "sigsegv") return {"was killed by signal 11 (Segmentation fault)" + tail, "signal 11" + mb};
  if (action == "exit3") return {"exited with code 3" + tail, "exit 3" + mb};
  return {"produced nothing for 2 s" + tail + "; it was killed (LoaderOptions::timeout)", "timeout" + mb};
}

// Worker w's first task is minibatch w; after answering it, its next is
// w + kNumWorkers (tasks are dealt round-robin).
int64_t FailingMinibatch(const std::string& step, int worker) {
  return step == "after_answer" ? worker + kNumWorkers : worker;
}

// Runs one case; returns its matrix cell ("signal 9 mb1, 31 ms") or
// "FAILED ...". The time is printed for the record, never checked.
std::string RunCase(StartMethod method, const std::string& step, const std::string& action) {
  SCOPED_TRACE(std::string(StartMethodName(method)) + " " + step + ":" + action);
  const int faulty = FaultyWorker(action);
  const int64_t failing_minibatch = FailingMinibatch(step, faulty);
  const Expected expected = ExpectedOutcome(action, failing_minibatch);
  const auto start = Clock::now();
  std::vector<pid_t> pids;
  Status error;
  std::optional<LoaderFailure> failure;
  {
    ScopedInjection inject(step + ":" + action + ":" + std::to_string(faulty));
    LoaderOptions o = LoaderTestOptions(kNumWorkers, method);
    o.timeout = kLongTimeout;
    auto loader = DataLoader::Create(o);
    if (!loader.ok()) {
      ADD_FAILURE() << loader.status();
      return "FAILED create";
    }
    pids = (*loader)->worker_pids();
    for (int64_t i = 0; i <= (*loader)->num_batches() && error.ok(); ++i) {
      if (action == "hang" && i == failing_minibatch) {
        FL_EXPECT_OK((*loader)->SetTimeout(kTimeout));
      }
      auto next = (*loader)->Next();
      if (!next.ok()) error = next.status();
    }
    failure = (*loader)->failure();
  }
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  bool ok = true;
  auto check = [&ok](bool condition) {
    ok = ok && condition;
    return condition;
  };
  // The exact message also says which path ended the case: a timeout
  // where a death was due (or the reverse) does not match.
  EXPECT_TRUE(check(error.code() == StatusCode::kChildFailed)) << error;
  const std::string who = "worker " + std::to_string(faulty) + " (pid " + std::to_string(pids.at(faulty)) + ") ";
  EXPECT_TRUE(check(error.message() == who + expected.text))
      << error.message() << "\nexpected: " << who << expected.text;
  EXPECT_TRUE(check(failure.has_value() && failure->worker == faulty && failure->minibatch == failing_minibatch));
  for (pid_t pid : pids) EXPECT_TRUE(check(!Unreaped(pid))) << "pid " << pid << " was left behind";
  EXPECT_TRUE(check(NoLeftoverSegments()));
  // A new loader works afterwards.
  auto again = DataLoader::Create(LoaderTestOptions(kNumWorkers, method));
  FL_EXPECT_OK(again);
  check(again.ok());
  if (again.ok()) {
    auto first = (*again)->Next();
    EXPECT_TRUE(check(first.ok() && first->has_value())) << first.status();
  }
  return (ok ? expected.cell : "FAILED " + expected.cell) + ", " + std::to_string(elapsed.count()) + " ms";
}

void RunMatrix(StartMethod method) {
  std::map<std::string, std::map<std::string, std::string>> cells;
  // Every step the worker accepts, by every action that ends or stalls it.
  for (InjectStep step : kInjectSteps) {
    for (InjectAction action : kProcessActions) {
      cells[InjectStepName(step)][InjectActionName(action)] =
          RunCase(method, InjectStepName(step), InjectActionName(action));
    }
  }
  std::string table =
      std::string("fault matrix, ") + StartMethodName(method) +
      " (worker 1 of 2 fails, worker 0 in the hang column; timeout 60 s, 2 s for the minibatch a hang "
      "withholds; each "
      "cell: error, minibatch, time from Create to the loader cleaned up (not checked); every cell also "
      "checked: no process, no segment held, a new loader works)\n";
  char line[256];
  std::snprintf(line, sizeof(line), "| %-14s | %-20s | %-20s | %-20s | %-20s |\n", "step", "SIGKILL", "SIGSEGV",
                "exit(3)", "hang");
  table += line;
  table +=
      "|----------------|----------------------|----------------------|----------------------|----------------------|"
      "\n";
  for (InjectStep each : kInjectSteps) {
    const char* step = InjectStepName(each);
    std::snprintf(line, sizeof(line), "| %-14s | %-20s | %-20s | %-20s | %-20s |\n", step,
                  cells[step]["sigkill"].c_str(), cells[step]["sigsegv"].c_str(), cells[step]["exit3"].c_str(),
                  cells[step]["hang"].c_str());
    table += line;
  }
  std::printf("%s\n", table.c_str());
}

TEST(WorkerFaultTest, EveryFaultOfAForkedWorkerIsANamedErrorAndNothingLeaks) { RunMatrix(StartMethod::kFork); }

TEST(WorkerFaultTest, EveryFaultOfASpawnedWorkerIsANamedErrorAndNothingLeaks) { RunMatrix(StartMethod::kSpawn); }

TEST(WorkerFaultTest, AMalformedInjectionIsRefusedWithTheExpectedForm) {
  ScopedInjection inject("mid_write:explode");
  auto loader = DataLoader::Create(LoaderTestOptions(1, StartMethod::kFork));
  ASSERT_FALSE(loader.ok());
  EXPECT_EQ(loader.status().message(),
            "FAULTLINE_LOADER_INJECT is 'mid_write:explode'; expected STEP:ACTION[:WORKER] with STEP one of started, "
            "before_restore, after_restore, after_task, mid_write, after_write, after_answer and ACTION one of "
            "sigkill, sigsegv, exit3, hang, misindex, badframe, misanswer, stall, cutoff, trickle, throw (misindex, "
            "badframe, misanswer, stall, cutoff, trickle at after_write or after_answer only; throw at mid_write "
            "only)");
  for (const char* misplaced : {"after_task:misindex", "mid_write:trickle", "after_write:throw"}) {
    ScopedInjection early(misplaced);
    EXPECT_EQ(DataLoader::Create(LoaderTestOptions(1, StartMethod::kFork)).status().code(),
              StatusCode::kInvalidArgument)
        << misplaced;
  }
}

// WORKER must be all of a non-negative int: no sign, no spaces, no trailing
// characters, nothing past INT_MAX.
TEST(WorkerFaultTest, AWorkerThatIsNotAWholeIndexIsRefused) {
  for (const char* worker : {"", "-1", "-0", "+1", "1x", " 1", "2147483648", "99999999999"}) {
    ScopedInjection inject(std::string("after_task:sigkill:") + worker);
    EXPECT_EQ(DataLoader::Create(LoaderTestOptions(1, StartMethod::kFork)).status().code(),
              StatusCode::kInvalidArgument)
        << "WORKER '" << worker << "'";
  }
}

// Worker `faulty` of 2 breaks the protocol by `fault` (STEP:ACTION) on its
// first minibatch (after_write) or its second (after_answer), minibatch
// FailingMinibatch(STEP, faulty), for both start methods: the minibatches
// before it arrive (their views held through the failure) with no
// timeout, so that none of the workers' start or work before the fault is
// timed; the failing one is asked for under `timeout` (0: none), which
// starts only once the worker has begun its broken answer (stall, trickle:
// kInjectStartedEnv), so that only the fault is timed. Taking it
// fails with `code` and the message `message(its pid, the message got)`,
// failure() names the worker, `step` and the minibatch, the loader ends
// (both workers reaped), and nothing leaks.
void ExpectMinibatchOfWorkerFails(int faulty, const std::string& fault, StatusCode code, const std::string& step,
                                  const std::function<std::string(pid_t, const std::string&)>& message,
                                  std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
  const int64_t failing = FailingMinibatch(fault.substr(0, fault.find(':')), faulty);
  for (StartMethod method : {StartMethod::kFork, StartMethod::kSpawn}) {
    SCOPED_TRACE(fault + " in worker " + std::to_string(faulty) + ", " + StartMethodName(method));
    ScopedInjection inject(fault + ":" + std::to_string(faulty));
    // With a timeout (stall, trickle), the worker marks when its broken
    // answer has begun, and the short timeout starts only then.
    const std::string started = std::string(std::getenv("TEST_TMPDIR")) + "/fault-started-" + StartMethodName(method);
    std::remove(started.c_str());
    ScopedEnv started_env(kInjectStartedEnv, started);
    auto loader = DataLoader::Create(LoaderTestOptions(kNumWorkers, method));
    FL_ASSERT_OK(loader);
    const std::vector<pid_t> pids = (*loader)->worker_pids();
    std::vector<std::optional<MiniBatchView>> healthy;  // the minibatches before the failing one
    for (int64_t batch = 0; batch < failing; ++batch) {
      auto view = (*loader)->NextView();
      ASSERT_TRUE(view.ok() && view->has_value()) << view.status();
      healthy.push_back(std::move(*view));
    }
    if (timeout.count() > 0) {
      ASSERT_TRUE(AppearsWithin(started, std::chrono::seconds(60)))
          << "worker " << faulty << " did not begin its broken answer (" << fault << ") within 60 s";
    }
    FL_ASSERT_OK((*loader)->SetTimeout(timeout));
    auto failed = (*loader)->NextView();
    EXPECT_EQ(failed.status().code(), code);
    EXPECT_EQ(failed.status().message(), message(pids[faulty], failed.status().message()));
    ASSERT_TRUE((*loader)->failure().has_value());
    EXPECT_EQ((*loader)->failure()->step, step);
    EXPECT_EQ((*loader)->failure()->worker, faulty);
    EXPECT_EQ((*loader)->failure()->minibatch, failing);
    for (pid_t pid : pids) EXPECT_FALSE(Unreaped(pid)) << "pid " << pid << " was left behind";
    healthy.clear();
    loader->reset();
    EXPECT_TRUE(NoLeftoverSegments());
  }
}

// A slot that does not hold the minibatch asked for (a worker that wrote
// another index) is DataLoss in step read_shared_memory, naming the worker
// and slot.
TEST(WorkerFaultTest, ASlotHoldingAnotherMinibatchIsANamedReadError) {
  ExpectMinibatchOfWorkerFails(1, "after_write:misindex", StatusCode::kDataLoss, "read_shared_memory",
                               [](pid_t pid, const std::string&) {
                                 return "reading minibatch 1 from worker 1 (pid " + std::to_string(pid) +
                                        ")'s segment slot 0: the segment holds minibatch 1001";
                               });
}

// An answer that breaks the protocol (a frame header no worker writes, or
// an answer for another minibatch) is ChildFailed in step "answer", naming
// the worker and the minibatch.
TEST(WorkerFaultTest, AnAnswerThatBreaksTheProtocolIsANamedError) {
  const std::pair<const char*, const char*> cases[] = {
      {"after_write:badframe",
       "a malformed answer header (minibatch 1, message length -1; expected a length of 0..16777216)"},
      {"after_write:misanswer", "it answered minibatch 1001"},
  };
  for (const auto& [fault, what] : cases) {
    ExpectMinibatchOfWorkerFails(1, fault, StatusCode::kChildFailed, "answer",
                                 [what = std::string(what)](pid_t pid, const std::string&) {
                                   return "worker 1 (pid " + std::to_string(pid) +
                                          ") broke the loader's protocol while producing minibatch 1: " + what;
                                 });
  }
}

// A worker that sends part of an answer and then nothing (half a frame
// header) is killed at the timeout, as a silent one is: the main process
// never waits in read(2) for the rest of a frame. Before the answers were
// assembled as they arrive, this case blocked Next() for good. The stall is
// in worker 0's second answer (minibatch 2): minibatches 0 and 1 come
// untimed, so the 2 s time only the stall, not the workers' start (see
// kTimeout).
TEST(WorkerFaultTest, AWorkerThatStopsMidAnswerIsKilledAtTheTimeout) {
  ExpectMinibatchOfWorkerFails(
      0, "after_answer:stall", StatusCode::kChildFailed, "answer",
      [](pid_t pid, const std::string&) {
        return "worker 0 (pid " + std::to_string(pid) +
               ") sent 8 of the 16 bytes of an answer's header and nothing more for 2 s while producing minibatch 2; "
               "it was killed (LoaderOptions::timeout)";
      },
      kTimeout);
}

// A worker that keeps sending its answer, a byte every 2 ms, but does not
// finish it is killed at the timeout too: the deadline is checked on every
// pass of the wait, not only when no byte came within poll's 50 ms (before,
// this case never timed out). The message says how far it got, which
// depends on the machine: N of the answer's bytes, N > 0.
TEST(WorkerFaultTest, AWorkerThatTricklesItsAnswerIsKilledAtTheTimeout) {
  ExpectMinibatchOfWorkerFails(
      0, "after_answer:trickle", StatusCode::kChildFailed, "answer",
      [](pid_t pid, const std::string& got) {
        const std::string head = "worker 0 (pid " + std::to_string(pid) + ") sent ";
        const size_t sent = got.rfind(head, 0) == 0 ? std::strtoull(got.c_str() + head.size(), nullptr, 10) : 0;
        EXPECT_GT(sent, 0u) << got;
        const std::string part = sent < 16
                                     ? std::to_string(sent) + " of the 16 bytes of an answer's header"
                                     : std::to_string(sent) + " of the 1048592 bytes of its answer for minibatch 2";
        return head + part +
               " and was still sending after 2 s while producing minibatch 2; it was killed "
               "(LoaderOptions::timeout)";
      },
      kTimeout);
}

// A worker that ends part-way through an answer is named by how it ended,
// with what it had sent.
TEST(WorkerFaultTest, AWorkerThatEndsMidAnswerIsNamedWithWhatItSent) {
  ExpectMinibatchOfWorkerFails(
      1, "after_write:cutoff", StatusCode::kChildFailed, "produce", [](pid_t pid, const std::string&) {
        return "worker 1 (pid " + std::to_string(pid) +
               ") exited with code 3 after it had sent 8 of the 16 bytes of an answer's header while producing "
               "minibatch 1";
      });
}

TEST(WorkerFaultTest, ATimeoutOutsideWhatPollCanWaitIsRefused) {
  LoaderOptions o = LoaderTestOptions(1, StartMethod::kFork);
  o.timeout = std::chrono::milliseconds(-5);
  EXPECT_EQ(DataLoader::Create(o).status().message(), "timeout is -5 ms; expected 0..2147483647 (0 = no timeout)");
  // Past poll(2)'s int milliseconds (a deadline this far would also overflow
  // the clock at milliseconds::max()).
  for (int64_t ms : {int64_t{2147483648}, std::chrono::milliseconds::max().count()}) {
    o.timeout = std::chrono::milliseconds(ms);
    EXPECT_EQ(DataLoader::Create(o).status().message(),
              "timeout is " + std::to_string(ms) + " ms; expected 0..2147483647 (0 = no timeout)");
  }
  o.timeout = std::chrono::milliseconds(2147483647);  // the longest is accepted
  FL_ASSERT_OK_AND_ASSIGN(std::unique_ptr<DataLoader> loader, DataLoader::Create(o));
  // A running loader's SetTimeout checks the same range, and a refused one
  // changes nothing.
  EXPECT_THAT(loader->SetTimeout(std::chrono::milliseconds(-5)),
              StatusIs(StatusCode::kInvalidArgument, "timeout is -5 ms; expected 0..2147483647 (0 = no timeout)"));
  EXPECT_THAT(loader->SetTimeout(std::chrono::milliseconds(2147483648)),
              StatusIs(StatusCode::kInvalidArgument, testing::HasSubstr("timeout is 2147483648 ms")));
  FL_EXPECT_OK(loader->SetTimeout(std::chrono::milliseconds(0)));
}

TEST(WorkerFaultTest, AHealthyLoaderWithATimeoutRunsToTheEnd) {
  LoaderOptions o = LoaderTestOptions(2, StartMethod::kSpawn);
  o.timeout = std::chrono::seconds(30);
  auto loader = DataLoader::Create(o);
  FL_ASSERT_OK(loader);
  int64_t count = 0;
  for (;;) {
    auto next = (*loader)->Next();
    FL_ASSERT_OK(next);
    if (!next->has_value()) break;
    ++count;
  }
  EXPECT_EQ(count, 13);
}

}  // namespace
}  // namespace faultline
