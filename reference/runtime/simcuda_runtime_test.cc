// Checks what simcuda adds beyond the conformance table: its configuration
// variables, where-initialized diagnostics, capacity and range checks.
// Anything that changes process state runs in a spawned child.
#include "reference/runtime/simcuda_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

ChildExit RunChild(const std::string& entry, const Env& env = {}) {
  SpawnOptions options;
  options.env = env;
  auto child = ChildProcess::Spawn(entry, {}, options);
  FL_EXPECT_OK(child);
  auto exit = child->Wait(std::chrono::seconds(60));
  FL_EXPECT_OK(exit);
  return *exit;
}

// Named so the initialization site can be recognised in the backtrace.
void TouchCudaInTheParent() { (void)SimCuda().GetDeviceCount(); }

int InitThenFork(const std::vector<std::string>&) {
  TouchCudaInTheParent();
  auto child = ChildProcess::Fork([] {
    // The count answers from the runtime's inherited cache (Note [Fork
    // poisoning]); the first call that needs the driver fails.
    auto count = SimCuda().GetDeviceCount();
    ReportToParent(count.ok() ? "count ok; " : "count " + count.status().ToString() + "; ");
    auto ptr = SimCuda().Malloc(64);
    ReportToParent(ptr.ok() ? "malloc ok" : ptr.status().ToString());
    return 0;
  });
  auto exit = child->Wait(std::chrono::seconds(30));
  ReportToParent(exit->transcript);
  return 0;
}
FL_REGISTER_CHILD("init_then_fork", InitThenFork);

TEST(SimCudaTest, ForkedChildErrorSaysWhereTheParentInitializedCuda) {
  ChildExit exit = RunChild("init_then_fork");
  const std::string& t = exit.transcript;
  EXPECT_THAT(t, testing::HasSubstr("count ok; ")) << t;
  EXPECT_THAT(t, testing::HasSubstr("cudaErrorInitializationError (3): \"initialization error\" in cudaMalloc")) << t;
  EXPECT_THAT(t, testing::HasSubstr("was forked after CUDA was initialized in pid " + std::to_string(exit.pid))) << t;
  EXPECT_THAT(t, testing::HasSubstr("TouchCudaInTheParent")) << t;
  EXPECT_THAT(t, testing::HasSubstr("simcuda_runtime_test.cc:")) << t;
}

int ReportDeviceCount(const std::vector<std::string>&) {
  auto count = SimCuda().GetDeviceCount();
  ReportToParent(count.ok() ? std::to_string(*count) : count.status().cuda_error()->name);
  ReportToParent(" " + std::to_string(SimCuda().DeviceCount()));
  return 0;
}
FL_REGISTER_CHILD("report_device_count", ReportDeviceCount);

TEST(SimCudaTest, DeviceCountFollowsConfigurationAndVisibleDevices) {
  EXPECT_EQ(RunChild("report_device_count", {{"FAULTLINE_SIMCUDA_DEVICES", "3"}}).transcript, "3 3");
  EXPECT_EQ(
      RunChild("report_device_count", {{"FAULTLINE_SIMCUDA_DEVICES", "3"}, {"CUDA_VISIBLE_DEVICES", "2,0"}}).transcript,
      "2 2");
  // The driver stops at the first invalid ordinal.
  EXPECT_EQ(RunChild("report_device_count", {{"FAULTLINE_SIMCUDA_DEVICES", "2"}, {"CUDA_VISIBLE_DEVICES", "1,7,0"}})
                .transcript,
            "1 1");
  EXPECT_EQ(RunChild("report_device_count", {{"CUDA_VISIBLE_DEVICES", ""}}).transcript, "cudaErrorNoDevice 0");
  EXPECT_EQ(RunChild("report_device_count", {{"FAULTLINE_SIMCUDA_DRIVER", "none"}}).transcript,
            "cudaErrorInsufficientDriver 0");
}

// A malformed configuration fails every call with cudaErrorInvalidValue and
// a message that names the variable, its value and what was expected (it
// is printed on stderr at the first call too). Before, a bad count was
// ignored for the default, and "-1" once wrapped to a huge count.
int ReportConfigurationError(const std::vector<std::string>&) {
  auto count = SimCuda().GetDeviceCount();
  ReportToParent(count.ok() ? std::to_string(*count)
                            : count.status().cuda_error()->name + ": " + count.status().message());
  return 0;
}
FL_REGISTER_CHILD("report_configuration_error", ReportConfigurationError);

TEST(SimCudaTest, ABadConfigurationFailsEveryCallNamingTheVariable) {
  for (const char* bad : {"-1", "65", "2x", " 2", "4294967297", "18446744073709551616"}) {
    const ChildExit exit = RunChild("report_configuration_error", {{"FAULTLINE_SIMCUDA_DEVICES", bad}});
    EXPECT_TRUE(exit.succeeded()) << bad << ": " << exit.Describe();
    EXPECT_EQ(exit.transcript, std::string("cudaErrorInvalidValue: cudaGetDeviceCount failed: invalid argument; bad "
                                           "simcuda configuration: FAULTLINE_SIMCUDA_DEVICES='") +
                                   bad + "': expected an integer in 0..64")
        << bad;
  }
  EXPECT_EQ(RunChild("report_device_count", {{"FAULTLINE_SIMCUDA_DEVICES", "64"}}).transcript, "64 64");
  EXPECT_THAT(RunChild("report_configuration_error", {{"FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY", "nine"}}).transcript,
              testing::HasSubstr("FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY='nine': expected MAJOR.MINOR such as 9.0"));
  EXPECT_THAT(RunChild("report_configuration_error", {{"FAULTLINE_SIMCUDA_MEMORY_BYTES", "0"}}).transcript,
              testing::HasSubstr("FAULTLINE_SIMCUDA_MEMORY_BYTES='0': expected an integer in 1.."));
}

// The primary-context query calls cuInit first, as the CUDA backend's does:
// it initializes the driver (no context), and reports cuInit's failure.
int QueryPrimaryContextChild(const std::vector<std::string>&) {
  auto state = [] { return SimCuda().initialized() ? "initialized" : "not initialized"; };
  std::string text = state();
  auto active = SimCuda().PrimaryContextActive(0);
  text += std::string(" -> ") + (active.ok() ? (*active ? "context" : "no context") : active.status().message());
  ReportToParent(text + " -> " + state());
  return 0;
}
FL_REGISTER_CHILD("query_primary_context", QueryPrimaryContextChild);

TEST(SimCudaTest, ThePrimaryContextQueryInitializesTheDriverLikeCuInit) {
  EXPECT_EQ(RunChild("query_primary_context").transcript, "not initialized -> no context -> initialized");
  EXPECT_EQ(RunChild("query_primary_context", {{"CUDA_VISIBLE_DEVICES", ""}}).transcript,
            "not initialized -> PrimaryContextActive: cuInit returned 100 -> initialized");
  EXPECT_EQ(RunChild("query_primary_context", {{"FAULTLINE_SIMCUDA_DRIVER", "stub"}}).transcript,
            "not initialized -> PrimaryContextActive: cuInit returned 34 -> not initialized");
  EXPECT_EQ(RunChild("query_primary_context", {{"FAULTLINE_SIMCUDA_DRIVER", "none"}}).transcript,
            "not initialized -> PrimaryContextActive: cuInit: libcuda.so.1 not found (no NVIDIA driver) -> not "
            "initialized");
}

int CapacityChild(const std::vector<std::string>&) {
  auto big = SimCuda().Malloc(2048);
  auto small = SimCuda().Malloc(512);
  ReportToParent(big.ok() ? "big ok" : big.status().ToString());
  ReportToParent(small.ok() ? "; small ok" : "; small failed");
  return 0;
}
FL_REGISTER_CHILD("capacity", CapacityChild);

TEST(SimCudaTest, AllocationsBeyondCapacityFailWithOutOfMemory) {
  std::string t = RunChild("capacity", {{"FAULTLINE_SIMCUDA_MEMORY_BYTES", "1024"}}).transcript;
  EXPECT_THAT(t, testing::HasSubstr("cudaErrorMemoryAllocation (2): \"out of memory\" in cudaMalloc")) << t;
  EXPECT_THAT(t, testing::HasSubstr("requested 2048 bytes with 0 of 1024 in use on device 0")) << t;
  EXPECT_THAT(t, testing::HasSubstr("; small ok")) << t;
}

int DeviceGuardChild(const std::vector<std::string>&) {
  SimCudaRuntime& sim = SimCuda();
  std::string text;
  {
    DeviceGuard guard(sim, 1);
    text += guard.status().ok() ? "switched " : "failed ";
    text += std::to_string(*sim.GetDevice());
    auto p = sim.Malloc(64);
    text += " alloc on " + std::to_string(sim.GetPointerAttributes(*p)->device);
    (void)sim.Free(*p);
  }
  text += " restored " + std::to_string(*sim.GetDevice());
  ReportToParent(text);
  return 0;
}
FL_REGISTER_CHILD("device_guard", DeviceGuardChild);

TEST(SimCudaTest, DeviceGuardSwitchesAndRestoresTheCurrentDevice) {
  EXPECT_EQ(RunChild("device_guard", {{"FAULTLINE_SIMCUDA_DEVICES", "2"}}).transcript,
            "switched 1 alloc on 1 restored 0");
}

// A launch into a stream of another device is refused before the body
// runs, and does not poison the context (a diagnostic, not a claim).
int StreamOfAnotherDeviceChild(const std::vector<std::string>&) {
  SimCudaRuntime& sim = SimCuda();
  (void)sim.SetDevice(1);
  StreamHandle stream = *sim.StreamCreate();
  (void)sim.SetDevice(0);
  bool ran = false;
  Status launch = sim.Launch(
      "Probe", LaunchConfig{1, 1, stream}, nullptr, 0, [&ran] { ran = true; }, [] { return 0; });
  auto after = sim.Malloc(64);
  ReportToParent(launch.message() + (ran ? "; ran" : "; did not run") +
                 (after.ok() ? "; malloc ok" : "; malloc failed"));
  return 0;
}
FL_REGISTER_CHILD("stream_of_another_device", StreamOfAnotherDeviceChild);

TEST(SimCudaTest, ALaunchIntoAnotherDevicesStreamIsRefused) {
  const std::string t = RunChild("stream_of_another_device", {{"FAULTLINE_SIMCUDA_DEVICES", "2"}}).transcript;
  EXPECT_THAT(t, testing::HasSubstr("the stream belongs to device 1; the current device is 0")) << t;
  EXPECT_THAT(t, testing::EndsWith("; did not run; malloc ok")) << t;
}

TEST(SimCudaTest, CopiesMustStayInsideDeviceAllocations) {
  SimCudaRuntime& sim = SimCuda();
  auto dev = sim.Malloc(64);
  FL_ASSERT_OK(dev);
  std::vector<char> host(128);
  Status overflow = sim.Memcpy(*dev, host.data(), 128, MemcpyKind::kHostToDevice);
  ASSERT_TRUE(overflow.cuda_error().has_value());
  EXPECT_EQ(overflow.cuda_error()->name, "cudaErrorInvalidValue");
  EXPECT_THAT(overflow.message(), testing::HasSubstr("+ 128 bytes is not inside a device allocation"));
  Status wrong_kind = sim.Memcpy(host.data(), host.data() + 64, 8, MemcpyKind::kDeviceToHost);
  EXPECT_EQ(wrong_kind.cuda_error()->code, 1);
  FL_EXPECT_OK(sim.Memcpy(*dev, host.data(), 64, MemcpyKind::kHostToDevice));
  EXPECT_TRUE(sim.GetLastError().cuda_error().has_value());  // the failures above
  FL_EXPECT_OK(sim.GetLastError());                          // cleared
  FL_EXPECT_OK(sim.Free(*dev));
  Status twice = sim.Free(*dev);
  EXPECT_EQ(twice.cuda_error()->name, "cudaErrorInvalidValue");
  (void)sim.GetLastError();
}

// host_waits counts the calls at which CUDA's documented rules make the
// host wait for the device ("API synchronization behavior" in the CUDA
// Runtime API reference), and only the successful ones; asynchronous copies
// are not counted (runtime.h says why). bytes_to_host counts what
// successful copies to the host moved, waiting or not.
TEST(SimCudaTest, HostWaitsFollowCudasSynchronizationRules) {
  SimCudaRuntime& sim = SimCuda();
  auto dev = sim.Malloc(64);
  FL_ASSERT_OK(dev);
  auto pinned = sim.MallocHost(64);
  FL_ASSERT_OK(pinned);
  auto stream = sim.StreamCreate();
  FL_ASSERT_OK(stream);
  std::vector<char> pageable(128);
  struct Case {
    const char* what;
    std::function<Status()> call;
    uint64_t waits, bytes_to_host;
  };
  const Case cases[] = {
      {"cudaMemcpy device to host", [&] { return sim.Memcpy(pageable.data(), *dev, 64, MemcpyKind::kDeviceToHost); }, 1,
       64},
      {"cudaMemcpy host to device", [&] { return sim.Memcpy(*dev, pageable.data(), 64, MemcpyKind::kHostToDevice); }, 1,
       0},
      {"cudaMemcpy device to device", [&] { return sim.Memcpy(*dev, *dev, 32, MemcpyKind::kDeviceToDevice); }, 0, 0},
      {"cudaMemcpyAsync device to pageable host",
       [&] { return sim.MemcpyAsync(pageable.data(), *dev, 48, MemcpyKind::kDeviceToHost, *stream); }, 0, 48},
      {"cudaMemcpyAsync device to pinned host",
       [&] { return sim.MemcpyAsync(*pinned, *dev, 64, MemcpyKind::kDeviceToHost, *stream); }, 0, 64},
      {"cudaMemcpyAsync device to device",
       [&] { return sim.MemcpyAsync(*dev, *dev, 32, MemcpyKind::kDeviceToDevice, *stream); }, 0, 0},
      {"cudaStreamSynchronize", [&] { return sim.StreamSynchronize(*stream); }, 1, 0},
      {"cudaDeviceSynchronize", [&] { return sim.DeviceSynchronize(); }, 1, 0},
      {"a failed cudaMemcpy", [&] { return sim.Memcpy(*dev, pageable.data(), 128, MemcpyKind::kHostToDevice); }, 0, 0},
      {"a failed cudaMemcpy device to host",
       [&] { return sim.Memcpy(pageable.data(), *dev, 128, MemcpyKind::kDeviceToHost); }, 0, 0},
  };
  for (const Case& c : cases) {
    const uint64_t before = sim.host_waits(), bytes_before = sim.bytes_to_host();
    (void)c.call();
    EXPECT_EQ(sim.host_waits() - before, c.waits) << c.what;
    EXPECT_EQ(sim.bytes_to_host() - bytes_before, c.bytes_to_host) << c.what;
  }
  (void)sim.GetLastError();  // the failed copy's
  FL_EXPECT_OK(sim.StreamDestroy(*stream));
  FL_EXPECT_OK(sim.FreeHost(*pinned));
  FL_EXPECT_OK(sim.Free(*dev));
}

// host_wait_ns adds up the time of the counted waits alone: a synchronous
// copy's (simcuda copies at the call, so its wait takes the copy's time), at
// most what the caller measured around it; nothing for an asynchronous copy
// of the same bytes or a failed wait.
TEST(SimCudaTest, HostWaitTimeIsTheTimeOfTheCountedWaits) {
  SimCudaRuntime& sim = SimCuda();
  constexpr size_t kBytes = size_t{16} << 20;
  auto dev = sim.Malloc(kBytes);
  FL_ASSERT_OK(dev);
  auto stream = sim.StreamCreate();
  FL_ASSERT_OK(stream);
  std::vector<char> host(kBytes + 1, 1);
  uint64_t before = sim.host_wait_ns();
  const auto start = std::chrono::steady_clock::now();
  FL_ASSERT_OK(sim.Memcpy(*dev, host.data(), kBytes, MemcpyKind::kHostToDevice));
  const auto around = std::chrono::steady_clock::now() - start;
  const uint64_t waited = sim.host_wait_ns() - before;
  EXPECT_GT(waited, 0u);
  EXPECT_LE(waited, static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(around).count()));
  before = sim.host_wait_ns();
  FL_ASSERT_OK(sim.MemcpyAsync(host.data(), *dev, kBytes, MemcpyKind::kDeviceToHost, *stream));
  EXPECT_FALSE(sim.Memcpy(*dev, host.data(), kBytes + 1, MemcpyKind::kHostToDevice).ok());
  EXPECT_EQ(sim.host_wait_ns() - before, 0u);
  (void)sim.GetLastError();  // the failed copy's
  FL_EXPECT_OK(sim.StreamDestroy(*stream));
  FL_EXPECT_OK(sim.Free(*dev));
}

// Successful cudaMalloc and cudaFree calls are counted
// (DeviceRuntime::device_alloc_calls); a refused one, or a free of null,
// is not.
TEST(SimCudaTest, DeviceAllocationCallsAreCounted) {
  SimCudaRuntime& sim = SimCuda();
  const uint64_t before = sim.device_alloc_calls();
  Result<void*> dev = sim.Malloc(64);
  FL_ASSERT_OK(dev);
  EXPECT_EQ(sim.device_alloc_calls() - before, 1u);
  EXPECT_FALSE(sim.Malloc(size_t{1} << 62).ok());
  FL_EXPECT_OK(sim.Free(nullptr));
  EXPECT_EQ(sim.device_alloc_calls() - before, 1u);
  FL_EXPECT_OK(sim.Free(*dev));
  EXPECT_EQ(sim.device_alloc_calls() - before, 2u);
  EXPECT_FALSE(sim.Free(*dev).ok());  // twice
  EXPECT_EQ(sim.device_alloc_calls() - before, 2u);
  (void)sim.GetLastError();
}

// A launch with a valid configuration runs its host twin and is counted
// (DeviceRuntime::launches); a refused one runs nothing and is not.
TEST(SimCudaTest, InvalidLaunchConfigurationIsRejected) {
  int runs = 0;
  const uint64_t before = SimCuda().launches();
  FL_ASSERT_OK(SimCuda().Launch(
      "Probe", LaunchConfig{1, 32, nullptr}, nullptr, 0, [&runs] { ++runs; }, [] { return 0; }));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(SimCuda().launches() - before, 1u);
  bool run = false;
  LaunchConfig config{1, 2048, nullptr};
  Status s = SimCuda().Launch(
      "Probe", config, nullptr, 0, [&run] { run = true; }, [] { return 0; });
  EXPECT_FALSE(run);
  EXPECT_EQ(SimCuda().launches() - before, 1u);
  ASSERT_TRUE(s.cuda_error().has_value());
  EXPECT_EQ(s.cuda_error()->name, "cudaErrorInvalidValue");
  EXPECT_THAT(s.message(), testing::HasSubstr("Probe launched with grid 1, block 2048")) << s;
  (void)SimCuda().GetLastError();
}

TEST(SimCudaTest, StreamsAreTrackedAndUnknownHandlesRejected) {
  SimCudaRuntime& sim = SimCuda();
  auto stream = sim.StreamCreate();
  FL_ASSERT_OK(stream);
  FL_EXPECT_OK(sim.StreamSynchronize(*stream));
  FL_EXPECT_OK(sim.StreamDestroy(*stream));
  int not_a_stream = 0;
  EXPECT_EQ(sim.StreamDestroy(&not_a_stream).cuda_error()->name, "cudaErrorInvalidResourceHandle");
  (void)sim.GetLastError();
}

TEST(SimCudaTest, ConcurrentCallsFromManyThreadsAreSafe) {
  SimCudaRuntime& sim = SimCuda();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&sim] {
      for (int i = 0; i < 200; ++i) {
        auto p = sim.Malloc(256);
        FL_ASSERT_OK(p);
        FL_ASSERT_OK(sim.Free(*p));
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace faultline
