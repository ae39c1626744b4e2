#include "reference/sampling/helper_crew.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

namespace faultline {
namespace {

// Each step runs the job once on each of the helpers asked for, on threads
// other than the caller's, and the same threads serve every step.
TEST(HelperCrewTest, EveryStepRunsOnceOnEachHelperOnTheSameThreads) {
  HelperCrew crew(3);
  EXPECT_EQ(crew.started(), 0);  // nothing until a step needs it
  std::mutex mutex;
  std::set<std::thread::id> seen;
  for (int step = 0; step < 200; ++step) {
    const int helpers = 1 + step % 3;
    std::atomic<int> runs{0};
    const std::function<void()> job = [&] {
      runs.fetch_add(1);
      std::lock_guard<std::mutex> lock(mutex);
      seen.insert(std::this_thread::get_id());
    };
    crew.Run(helpers, job);
    crew.Wait();
    ASSERT_EQ(runs.load(), helpers) << "step " << step;
  }
  EXPECT_EQ(crew.started(), 3);
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.count(std::this_thread::get_id()), 0u);
}

// Wait returns only once every helper's job has returned: the caller reads
// what they wrote without a race (TSan checks this), and the jobs overlap.
TEST(HelperCrewTest, WaitReturnsAfterEveryJob) {
  HelperCrew crew(2);
  std::atomic<int> arrived{0}, slot{0};
  int written[2] = {0, 0};
  const std::function<void()> job = [&] {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();  // both run at once
    written[slot.fetch_add(1)] = 7;
  };
  crew.Run(2, job);
  crew.Wait();
  EXPECT_EQ(written[0] + written[1], 14);
}

// More helpers than the crew may have: it runs on max_helpers; none at
// all (a crew of 0, or a step of 0) runs nothing and Wait returns.
TEST(HelperCrewTest, StepsAreClampedToTheCrew) {
  std::atomic<int> runs{0};
  const std::function<void()> job = [&] { runs.fetch_add(1); };
  HelperCrew two(2);
  two.Run(5, job);
  two.Wait();
  EXPECT_EQ(runs.load(), 2);
  two.Run(0, job);
  two.Wait();
  EXPECT_EQ(runs.load(), 2);
  HelperCrew none(0);
  none.Run(3, job);
  none.Wait();
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(none.started(), 0);
}

// A crew destroyed with a step under way (its caller's Wait skipped) waits
// for the step before it ends its threads.
TEST(HelperCrewTest, DestructionWaitsForTheStepUnderWay) {
  std::atomic<bool> release{false};
  std::atomic<int> finished{0};
  const std::function<void()> job = [&] {
    while (!release.load()) std::this_thread::yield();
    finished.fetch_add(1);
  };
  {
    HelperCrew crew(2);
    crew.Run(2, job);
    release.store(true);
  }
  EXPECT_EQ(finished.load(), 2);
}

}  // namespace
}  // namespace faultline
