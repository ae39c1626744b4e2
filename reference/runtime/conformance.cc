// Implements the conformance scenarios. Observations use only what both
// backends expose through DeviceRuntime, so the same text is expected of both.
#include "reference/runtime/conformance.h"

#include <cstdlib>
#include <functional>
#include <map>
#include <thread>

#include "kernels/fill.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace conformance {
namespace {

using Observe = std::function<std::string(DeviceRuntime&)>;

// Formats a status as "ok" or "<cudaErrorName>(<code>) <string>".
std::string Show(const Status& s) {
  if (s.ok()) return "ok";
  if (!s.cuda_error()) return std::string(StatusCodeName(s.code()));
  return s.cuda_error()->name + "(" + std::to_string(s.cuda_error()->code) + ") " + s.cuda_error()->string;
}
template <typename T>
std::string Show(const Result<T>& r) {
  return Show(r.status());
}

std::string Context(DeviceRuntime& rt) {
  auto active = rt.PrimaryContextActive(0);
  if (!active.ok()) return "context?";
  return *active ? "context" : "no-context";
}

// Runs `observe` in a forked child and returns its report.
std::string InForkedChild(DeviceRuntime& rt, const Observe& observe) {
  auto child = ChildProcess::Fork([&] {
    ReportToParent(observe(rt));
    return 0;
  });
  if (!child.ok()) return "fork failed";
  auto exit = child->Wait(std::chrono::seconds(60));
  return exit.ok() ? exit->transcript : "wait failed";
}

std::string CountInChild(DeviceRuntime& rt) { return Show(rt.GetDeviceCount()); }

// The observations, by scenario name. Each starts in a fresh process.
const std::map<std::string, Observe>& Observations() {
  static const auto* table = new std::map<std::string, Observe>{
      {"first_call_initializes",
       [](DeviceRuntime& rt) {
         std::string before = InForkedChild(rt, CountInChild);
         std::string first = Show(rt.GetDeviceCount());
         return "fork before: " + before + "; count: " + first + "; fork after: " + InForkedChild(rt, CountInChild);
       }},
      {"fork_after_init_fails_every_call",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         return InForkedChild(rt, [](DeviceRuntime& child) {
           int host = 0;
           // One statement per call: the order of operands of + is unspecified.
           std::string text = Show(child.SetDevice(0));
           text += " | " + Show(child.Malloc(64));
           text += " | " + Show(child.GetPointerAttributes(&host));
           text += " | " + Show(child.HostUnregister(&host));
           return text + " | DeviceCount()=" + std::to_string(child.DeviceCount());
         });
       }},
      {"spawned_child_after_init",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         auto child = ChildProcess::Spawn("conformance_count", {RuntimeKindName(rt.kind())});
         if (!child.ok()) return std::string("spawn failed");
         auto exit = child->Wait(std::chrono::seconds(60));
         return "spawned: " + (exit.ok() ? exit->transcript : std::string("wait failed"));
       }},
      {"set_device_creates_context",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::string call = Show(rt.SetDevice(0));
         return before + " -> " + call + " -> " + Context(rt);
       }},
      {"free_null_creates_context",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::string call = Show(rt.Free(nullptr));
         return before + " -> " + call + " -> " + Context(rt);
       }},
      {"pointer_attributes_unregistered",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::vector<char> host(4096);
         auto attrs = rt.GetPointerAttributes(host.data());
         std::string type = attrs.ok() ? std::to_string(static_cast<int>(attrs->type)) : Show(attrs);
         return before + " -> type " + type + " -> " + Context(rt);
       }},
      {"device_memory_attributes",
       [](DeviceRuntime& rt) {
         auto p = rt.Malloc(1024);
         if (!p.ok()) return Show(p);
         auto attrs = rt.GetPointerAttributes(*p);
         std::string text = "type " + std::to_string(static_cast<int>(attrs->type)) + " device " +
                            std::to_string(attrs->device);
         text += "; free " + Show(rt.Free(*p));
         return text + "; free again " + Show(rt.Free(*p));
       }},
      {"register_twice",
       [](DeviceRuntime& rt) {
         std::vector<char> host(1 << 16);
         std::string first = Show(rt.HostRegister(host.data(), host.size()));
         auto attrs = rt.GetPointerAttributes(host.data() + 100);
         std::string type = attrs.ok() ? std::to_string(static_cast<int>(attrs->type)) : Show(attrs);
         std::string second = Show(rt.HostRegister(host.data(), host.size()));
         std::string unpin = Show(rt.HostUnregister(host.data()));
         std::string unpin_again = Show(rt.HostUnregister(host.data()));
         return first + "; type " + type + "; again " + second + "; unregister " + unpin + "; again " + unpin_again;
       }},
      {"unregister_foreign_memory",
       [](DeviceRuntime& rt) {
         std::vector<char> host(4096);
         return Show(rt.HostUnregister(host.data()));
       }},
      {"no_visible_device",
       [](DeviceRuntime& rt) {
         std::string count = Show(rt.GetDeviceCount());
         return count + "; DeviceCount()=" + std::to_string(rt.DeviceCount());
       }},
      {"no_driver",
       [](DeviceRuntime& rt) {
         std::string count = Show(rt.GetDeviceCount());
         return count + "; DeviceCount()=" + std::to_string(rt.DeviceCount());
       }},
      {"invalid_device",
       [](DeviceRuntime& rt) { return Show(rt.SetDevice(rt.DeviceCount() + 7)); }},
      {"illegal_address_is_sticky",
       [](DeviceRuntime& rt) {
         auto good = rt.Malloc(1024);
         if (!good.ok()) return Show(good);
         std::string launch = Show(kernels::Fill(rt, nullptr, 1, 1.0f));
         std::string sync = Show(rt.DeviceSynchronize());
         std::string later = Show(rt.Malloc(1024));
         std::vector<char> host(16);
         std::string copy = Show(rt.Memcpy(host.data(), *good, 16, MemcpyKind::kDeviceToHost));
         return "launch " + launch + "; sync " + sync + "; malloc " + later + "; memcpy " + copy;
       }},
      {"last_error_is_per_thread",
       [](DeviceRuntime& rt) {
         std::vector<char> host(64);
         (void)rt.HostUnregister(host.data());
         std::string other;
         std::thread([&] { other = Show(rt.PeekAtLastError()); }).join();
         std::string peek = Show(rt.PeekAtLastError());
         std::string get = Show(rt.GetLastError());
         std::string after = Show(rt.GetLastError());
         return "other thread " + other + "; peek " + peek + "; get " + get + "; after " + after;
       }},
  };
  return *table;
}

int RunObservation(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  auto kind = ParseRuntimeKind(args[1]);
  auto it = Observations().find(args[0]);
  if (!kind.ok() || it == Observations().end()) return 2;
  ReportToParent(it->second(GetRuntime(*kind)));
  return 0;
}
FL_REGISTER_CHILD("conformance_scenario", RunObservation);

int CountEntry(const std::vector<std::string>& args) {
  auto kind = ParseRuntimeKind(args.empty() ? "" : args[0]);
  if (!kind.ok()) return 2;
  ReportToParent(Show(GetRuntime(*kind).GetDeviceCount()));
  return 0;
}
FL_REGISTER_CHILD("conformance_count", CountEntry);

constexpr char kInit3[] = "cudaErrorInitializationError(3) initialization error";

}  // namespace

const std::vector<Scenario>& Scenarios() {
  static const auto* scenarios = new std::vector<Scenario>{
      {"first_call_initializes",
       "the first runtime call (even cudaGetDeviceCount) initializes CUDA; a child forked before it is fine, "
       "one forked after it is not",
       std::string("fork before: ok; count: ok; fork after: ") + kInit3},
      {"fork_after_init_fails_every_call",
       "every runtime call in a child forked after the parent initialized CUDA fails with error 3",
       std::string(kInit3) + " | " + kInit3 + " | " + kInit3 + " | " + kInit3 + " | DeviceCount()=0"},
      {"spawned_child_after_init", "an exec'd (spawned) child initializes CUDA normally", "spawned: ok"},
      {"set_device_creates_context", "cudaSetDevice creates the primary context (CUDA >= 12)",
       "no-context -> ok -> context"},
      {"free_null_creates_context", "cudaFree(0) creates the primary context", "no-context -> ok -> context"},
      {"pointer_attributes_unregistered",
       "cudaPointerGetAttributes on unregistered host memory succeeds with cudaMemoryTypeUnregistered (0) and "
       "creates the primary context",
       "no-context -> type 0 -> context"},
      {"device_memory_attributes", "device memory reports cudaMemoryTypeDevice (2); freeing twice is invalid",
       "type 2 device 0; free ok; free again cudaErrorInvalidValue(1) invalid argument"},
      {"register_twice",
       "cudaHostRegister on a registered range fails with 712; unregistering twice fails with 713",
       "ok; type 1; again cudaErrorHostMemoryAlreadyRegistered(712) part or all of the requested memory range is "
       "already mapped; unregister ok; again cudaErrorHostMemoryNotRegistered(713) pointer does not correspond to "
       "a registered memory region"},
      {"unregister_foreign_memory", "cudaHostUnregister of memory this process did not register fails with 713",
       "cudaErrorHostMemoryNotRegistered(713) pointer does not correspond to a registered memory region"},
      {"no_visible_device",
       "with no visible device cudaGetDeviceCount fails with 100 and the device count is 0",
       "cudaErrorNoDevice(100) no CUDA-capable device is detected; DeviceCount()=0",
       {{"CUDA_VISIBLE_DEVICES", ""}},
       {{"CUDA_VISIBLE_DEVICES", ""}}},
      {"no_driver", "without a driver every call fails with 35 and the device count is 0",
       "cudaErrorInsufficientDriver(35) CUDA driver version is insufficient for CUDA runtime version; "
       "DeviceCount()=0",
       {{"FAULTLINE_SIMCUDA_DRIVER", "none"}},
       {},
       /*simcuda_only=*/true},
      {"invalid_device", "cudaSetDevice with an ordinal past the device count fails with 101",
       "cudaErrorInvalidDevice(101) invalid device ordinal"},
      {"illegal_address_is_sticky",
       "a kernel that touches an illegal address raises 700 at the next synchronization, and every later call "
       "fails with it",
       "launch ok; sync cudaErrorIllegalAddress(700) an illegal memory access was encountered; malloc "
       "cudaErrorIllegalAddress(700) an illegal memory access was encountered; memcpy cudaErrorIllegalAddress(700) "
       "an illegal memory access was encountered"},
      {"last_error_is_per_thread", "the last error is recorded per thread and cleared by cudaGetLastError",
       "other thread ok; peek cudaErrorHostMemoryNotRegistered(713) pointer does not correspond to a registered "
       "memory region; get cudaErrorHostMemoryNotRegistered(713) pointer does not correspond to a registered "
       "memory region; after ok"},
  };
  return *scenarios;
}

Result<std::string> RunScenario(const Scenario& scenario, RuntimeKind runtime) {
  SpawnOptions options;
  options.env = runtime == RuntimeKind::kCuda ? scenario.cuda_env : scenario.simcuda_env;
  FL_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn("conformance_scenario",
                                                              {scenario.name, RuntimeKindName(runtime)}, options));
  FL_ASSIGN_OR_RETURN(ChildExit exit, child.Wait(std::chrono::seconds(120)));
  if (!exit.succeeded()) {
    return Status(StatusCode::kChildFailed, "scenario " + scenario.name + ": " + exit.Describe() +
                                                "; transcript: " + exit.transcript);
  }
  return exit.transcript;
}

}  // namespace conformance
}  // namespace faultline
