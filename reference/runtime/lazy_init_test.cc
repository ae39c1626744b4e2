// Checks LazyInitCuda on the runtime under test (simcuda here, real CUDA in
// the gpu twin lazy_init_cuda_test): clean first use, the bad-fork error
// after fork, no error after spawn. Every case runs in a spawned child so the
// test process stays uninitialized.
#include "reference/runtime/lazy_init.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference/base/status_matchers.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"
#include "reference/runtime/test_runtime.h"

namespace faultline {
namespace {

std::string Describe(const Status& s) {
  if (s.ok()) return "ok";
  const auto& cuda = s.cuda_error();
  return (cuda ? cuda->name + "=" + std::to_string(cuda->code) + " " : std::string()) + s.message();
}

DeviceRuntime& RuntimeUnderTest() {
  Result<RuntimeKind> kind = RuntimeKindUnderTest();
  return GetRuntime(kind.ok() ? *kind : RuntimeKind::kSimCuda);
}

// Initializes in this process, then reports what a forked and a spawned
// child's LazyInitCuda return.
int InitThenStartChildren(const std::vector<std::string>&) {
  DeviceRuntime& rt = RuntimeUnderTest();
  ReportToParent("parent: " + Describe(LazyInitCuda(rt)) + "\n");
  ReportToParent("again: " + Describe(LazyInitCuda(rt)) + "\n");
  auto forked = ChildProcess::Fork([&rt] {
    ReportToParent("bad_fork=" + std::to_string(InBadFork()) + " " + Describe(LazyInitCuda(rt)));
    return 0;
  });
  ReportToParent("forked: " + forked->Wait(std::chrono::seconds(30))->transcript + "\n");
  auto spawned = ChildProcess::Spawn("lazy_init_fresh", {});
  ReportToParent("spawned: " + spawned->Wait(std::chrono::seconds(30))->transcript + "\n");
  return 0;
}
FL_REGISTER_CHILD("lazy_init_parent", InitThenStartChildren);

int Fresh(const std::vector<std::string>&) {
  ReportToParent("bad_fork=" + std::to_string(InBadFork()) + " " + Describe(LazyInitCuda(RuntimeUnderTest())));
  return 0;
}
FL_REGISTER_CHILD("lazy_init_fresh", Fresh);

TEST(LazyInitCudaTest, ForkAfterInitGetsPyTorchsMessageSpawnIsClean) {
  auto runtime = DeviceRuntimeUnderTest();
  FL_ASSERT_OK(runtime);
  auto child = ChildProcess::Spawn("lazy_init_parent", {});
  FL_ASSERT_OK(child);
  auto exit = child->Wait(std::chrono::seconds(60));
  ASSERT_TRUE(exit.ok() && exit->succeeded()) << exit->Describe();
  const std::string& t = exit->transcript;
  EXPECT_THAT(t, testing::HasSubstr("parent: ok\nagain: ok\n")) << t;
  // No CUDA code: PyTorch raises before calling CUDA (as torch 2.11 does on an H100).
  EXPECT_NE(t.find("forked: bad_fork=1 Cannot re-initialize CUDA in forked "
                   "subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method "
                   "(cuInit failed: initialization error"),
            std::string::npos)
      << t;
  if ((*runtime)->kind() == RuntimeKind::kSimCuda) {
    // Beyond real CUDA: simcuda names the parent and where it initialized.
    EXPECT_NE(t.find("initialization error; this process (pid "), std::string::npos) << t;
    EXPECT_NE(t.find("InitThenStartChildren"), std::string::npos) << "the parent's init site is named: " << t;
  }
  EXPECT_NE(t.find("spawned: bad_fork=0 ok\n"), std::string::npos) << t;
}

TEST(LazyInitCudaTest, CpuRuntimeIsRefusedByName) {
  Status s = LazyInitCuda(GetRuntime(RuntimeKind::kCpu));
  EXPECT_EQ(s.message(), "LazyInitCuda: runtime is cpu; expected simcuda or cuda");
}

}  // namespace
}  // namespace faultline
