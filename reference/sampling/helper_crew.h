// Provides HelperCrew: helper threads kept for the length of one call that
// runs several parallel steps (the hops of a minibatch), so that each step
// does not start and end threads of its own. On a 2-core machine a thread
// per hop cost ~6 % of a two-thread minibatch's samples: the clone, and at
// its exit glibc's madvise of the unused stack, whose TLB shootdown
// interrupts the other core. The threads end with the crew: nothing
// outlives the call (a process forked later has no idle threads of ours).
#ifndef FAULTLINE_REFERENCE_SAMPLING_HELPER_CREW_H_
#define FAULTLINE_REFERENCE_SAMPLING_HELPER_CREW_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace faultline {

class HelperCrew {
 public:
  // A crew of at most `max_helpers` threads, started as steps first need
  // them (a call that fails its checks starts none).
  explicit HelperCrew(int max_helpers) : max_helpers_(max_helpers) {}
  // Stops the threads and joins them (after the step under way, if any).
  ~HelperCrew();
  HelperCrew(const HelperCrew&) = delete;
  HelperCrew& operator=(const HelperCrew&) = delete;

  // Runs `job` once on each of `helpers` threads (at most max_helpers;
  // fewer when the system has no more threads to give, as few as none: the
  // caller then does all the work itself) and returns at once; Wait()
  // returns when every one has returned. `job` must not throw, and must
  // stay valid until Wait() returns. One step at a time: a Run after a Run
  // without a Wait between them is a caller's bug.
  void Run(int helpers, const std::function<void()>& job);
  void Wait();
  // The threads started so far (read on the caller's thread).
  int started() const { return static_cast<int>(threads_.size()); }

 private:
  void Serve(int index);

  const int max_helpers_;
  std::mutex mutex_;
  std::condition_variable work_;  // a new step, or the end
  std::condition_variable done_;  // a helper finished its part of the step
  const std::function<void()>* job_ = nullptr;
  int64_t step_ = 0;  // counts the steps run
  int helpers_ = 0;   // the threads that take part in the current step
  int running_ = 0;   // of those, the ones not finished yet
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_SAMPLING_HELPER_CREW_H_
