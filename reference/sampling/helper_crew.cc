// Implements HelperCrew: each thread waits for a step it takes part in, runs
// the step's job, and reports back; the destructor wakes them to end.
#include "reference/sampling/helper_crew.h"

#include <algorithm>
#include <cassert>
#include <system_error>

namespace faultline {

HelperCrew::~HelperCrew() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return running_ == 0; });
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void HelperCrew::Run(int helpers, const std::function<void()>& job) {
  if (helpers > max_helpers_) helpers = max_helpers_;
  std::lock_guard<std::mutex> lock(mutex_);  // a thread started here waits for it
  assert(running_ == 0 && "HelperCrew::Run before the last step's Wait");
  while (static_cast<int>(threads_.size()) < helpers) {
    const int index = static_cast<int>(threads_.size());
    try {
      threads_.emplace_back([this, index] { Serve(index); });
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones started, and the caller, do it all
    }
  }
  helpers_ = std::min(helpers, static_cast<int>(threads_.size()));
  if (helpers_ <= 0) return;
  job_ = &job;
  running_ = helpers_;
  ++step_;
  work_.notify_all();
}

void HelperCrew::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

void HelperCrew::Serve(int index) {
  int64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || step_ != seen; });
    if (stopping_) return;
    seen = step_;
    if (index >= helpers_) continue;  // not in this step
    const std::function<void()>& job = *job_;
    lock.unlock();
    job();
    lock.lock();
    if (--running_ == 0) done_.notify_all();
  }
}

}  // namespace faultline
