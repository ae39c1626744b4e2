// F9 — the device count is cached before CUDA_VISIBLE_DEVICES is final
// (PyTorch #95073, fix PR 122815; vLLM #4969, PR 5473). The process
// starts with CUDA_VISIBLE_DEVICES=0,1 and asks the device count at import
// time; then its launcher assigns it GPU 1 (CUDA_VISIBLE_DEVICES=1, as Ray
// and vLLM's workers do before CUDA is initialized). The worker then
// initializes CUDA and shards a copy over every device the count promises;
// the rows that come back must equal the host rows. docs/failures/F9.md.
#include <unistd.h>

#include <cstdlib>

#include "reference/runtime/lazy_init.h"
#include "repro/F9/signature.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {
namespace {

constexpr size_t kFloats = 256;

enum class Caching {
  kAlways,           // torch.cuda.device_count() 1.13 - 2.2: functools.lru_cache(maxsize=1)
  kOnceInitialized,  // PR 122815: cached only once CUDA is initialized
  kNever,            // vLLM PR 5473: cuda_device_count_stateless
};

// torch.cuda.device_count(): an NVML count (PR 84879: it does not initialize
// CUDA and follows the CUDA_VISIBLE_DEVICES of the moment), cached by policy.
class DeviceCounter {
 public:
  DeviceCounter(DeviceRuntime& rt, Caching caching) : rt_(rt), caching_(caching) {}
  Result<int> Count() {
    if (cached_ >= 0) return cached_;
    FL_ASSIGN_OR_RETURN(int count, rt_.NvmlDeviceCount());
    if (caching_ == Caching::kAlways || (caching_ == Caching::kOnceInitialized && initialized_)) cached_ = count;
    return count;
  }
  // torch.cuda._lazy_init(): after it, CUDA has read CUDA_VISIBLE_DEVICES for good.
  Status LazyInit() {
    FL_RETURN_IF_ERROR(LazyInitCuda(rt_));
    initialized_ = true;
    return OkStatus();
  }

 private:
  DeviceRuntime& rt_;
  const Caching caching_;
  bool initialized_ = false;
  int cached_ = -1;
};

// Copies shard d of `rows` through device d and back, for every device.
Status ShardOverDevices(DeviceRuntime& rt, int devices, const std::vector<float>& rows, std::vector<float>* out,
                        std::string* step) {
  const size_t per = (rows.size() + devices - 1) / devices;
  for (int d = 0; d < devices; ++d) {
    const size_t begin = std::min(rows.size(), d * per), end = std::min(rows.size(), begin + per);
    if (begin == end) continue;
    const size_t bytes = (end - begin) * sizeof(float);
    *step = "set_device";  // torch.cuda.set_device(d)
    FL_RETURN_IF_ERROR(rt.SetDevice(d));
    *step = "copy";
    FL_ASSIGN_OR_RETURN(void* device, rt.Malloc(bytes));
    Status s = rt.Memcpy(device, rows.data() + begin, bytes, MemcpyKind::kHostToDevice);
    if (s.ok()) s = rt.Memcpy(out->data() + begin, device, bytes, MemcpyKind::kDeviceToHost);
    Status freed = rt.Free(device);
    FL_RETURN_IF_ERROR(s);
    FL_RETURN_IF_ERROR(freed);
  }
  return OkStatus();
}

const char* CachingName(Caching caching) {
  switch (caching) {
    case Caching::kAlways: return "cached on first call (before PR 122815)";
    case Caching::kOnceInitialized: return "cached only once CUDA is initialized (PR 122815)";
    case Caching::kNever: return "never cached (vLLM cuda_device_count_stateless, PR 5473)";
  }
  return "";
}

Outcome Run(RuntimeKind kind, Caching caching, const Expected& expected) {
  DeviceRuntime& rt = GetRuntime(kind);
  const std::string process = "main process (pid " + std::to_string(getpid()) + ")";
  std::string transcript = std::string("F9: device_count() ") + CachingName(caching) + "\n";
  DeviceCounter counter(rt, caching);
  // Import time: CUDA_VISIBLE_DEVICES=0,1 (from the variant's environment).
  Result<int> at_import = counter.Count();
  if (!at_import.ok()) return Unexpected(Observe(at_import.status(), process, "device_count"), transcript);
  transcript += "CUDA_VISIBLE_DEVICES=0,1: device_count() = " + std::to_string(*at_import) + "\n";
  if (*at_import < 2) {
    return NotRunHere("F9 needs 2 GPUs visible under CUDA_VISIBLE_DEVICES=0,1; device_count() reports " +
                          std::to_string(*at_import) +
                          " (simcuda gets FAULTLINE_SIMCUDA_DEVICES=2 from the variant; on real CUDA, run on a "
                          "machine with 2 or more GPUs)",
                      transcript);
  }
  // The launcher assigns this worker GPU 1, before CUDA is initialized.
  setenv("CUDA_VISIBLE_DEVICES", "1", /*overwrite=*/1);
  if (Status s = counter.LazyInit(); !s.ok()) return Unexpected(Observe(s, process, "lazy_init"), transcript);
  Result<int> count = counter.Count();
  if (!count.ok()) return Unexpected(Observe(count.status(), process, "device_count"), transcript);
  Result<int> runtime_count = rt.GetDeviceCount();
  if (!runtime_count.ok()) return Unexpected(Observe(runtime_count.status(), process, "device_count"), transcript);
  transcript += "CUDA_VISIBLE_DEVICES=1, CUDA initialized: device_count() = " + std::to_string(*count) +
                ", cudaGetDeviceCount = " + std::to_string(*runtime_count) + "\n";

  std::vector<float> rows(kFloats), out(kFloats, 0.0f);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i) * 1.5f + 0.25f;
  std::string step;
  Status sharded = ShardOverDevices(rt, *count, rows, &out, &step);
  if (!sharded.ok()) {
    ObservedError error = Observe(sharded, process, step);
    return EndedInError(expected, error, transcript);
  }
  if (auto missed = RanToTheEnd(expected, "every promised device was usable", transcript)) return *missed;
  return PassedIf(out == rows && *count == *runtime_count,
                  "device_count() equals cudaGetDeviceCount and the rows copied through it equal the host rows",
                  transcript);
}

const VariantEnv kLaunchEnv = {{"FAULTLINE_SIMCUDA_DEVICES", "2"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};

const bool kRegistered = RegisterFailure(Failure{
    "F9",
    "the device count is cached before CUDA_VISIBLE_DEVICES is final (PyTorch 95073 / 122815, vLLM 4969 / 5473)",
    {
        Reproduces(
            "legacy", "count cached at import, CUDA_VISIBLE_DEVICES 0,1 -> 1, shard over the count", F9LegacyStaleCount,
            [](RuntimeKind rt, const Signature& s) { return Run(rt, Caching::kAlways, ExpectSignature{s}); },
            kLaunchEnv),
        Passes(
            "fixed", "count not cached before CUDA is initialized (PR 122815)",
            [](RuntimeKind rt) { return Run(rt, Caching::kOnceInitialized, ExpectPass{}); }, kLaunchEnv),
        Passes(
            "workaround", "count never cached (vLLM cuda_device_count_stateless)",
            [](RuntimeKind rt) { return Run(rt, Caching::kNever, ExpectPass{}); }, kLaunchEnv),
    }});

}  // namespace
}  // namespace repro
}  // namespace faultline
