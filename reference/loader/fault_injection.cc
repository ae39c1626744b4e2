// Implements the test-only worker fault injection (fault_injection.h).
#include "reference/loader/fault_injection.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <iterator>
#include <optional>
#include <string_view>

#include "reference/base/parse_int.h"
#include "reference/base/unique_fd.h"

namespace faultline {
namespace {

template <typename T, size_t N>
std::string Join(const T (&values)[N], const char* (*name)(T)) {
  std::string joined;
  for (T value : values) joined += (joined.empty() ? "" : ", ") + std::string(name(value));
  return joined;
}

template <typename T, size_t N>
std::optional<T> Named(const std::string& word, const T (&values)[N], const char* (*name)(T)) {
  for (T value : values) {
    if (word == name(value)) return value;
  }
  return std::nullopt;
}

constexpr InjectAction kAllActions[] = {InjectAction::kSigkill,   InjectAction::kSigsegv,  InjectAction::kExit3,
                                        InjectAction::kHang,      InjectAction::kMisindex, InjectAction::kBadframe,
                                        InjectAction::kMisanswer, InjectAction::kStall,    InjectAction::kCutoff,
                                        InjectAction::kTrickle,   InjectAction::kThrow};

}  // namespace

const char* InjectStepName(InjectStep step) {
  switch (step) {
    case InjectStep::kStarted: return "started";
    case InjectStep::kBeforeRestore: return "before_restore";
    case InjectStep::kAfterRestore: return "after_restore";
    case InjectStep::kAfterTask: return "after_task";
    case InjectStep::kMidWrite: return "mid_write";
    case InjectStep::kAfterWrite: return "after_write";
    case InjectStep::kAfterAnswer: return "after_answer";
  }
  return "?";
}

const char* InjectActionName(InjectAction action) {
  switch (action) {
    case InjectAction::kSigkill: return "sigkill";
    case InjectAction::kSigsegv: return "sigsegv";
    case InjectAction::kExit3: return "exit3";
    case InjectAction::kHang: return "hang";
    case InjectAction::kMisindex: return "misindex";
    case InjectAction::kBadframe: return "badframe";
    case InjectAction::kMisanswer: return "misanswer";
    case InjectAction::kStall: return "stall";
    case InjectAction::kCutoff: return "cutoff";
    case InjectAction::kTrickle: return "trickle";
    case InjectAction::kThrow: return "throw";
  }
  return "?";
}

InjectActionKind KindOf(InjectAction action) {
  switch (action) {
    case InjectAction::kSigkill:
    case InjectAction::kSigsegv:
    case InjectAction::kExit3:
    case InjectAction::kHang: return InjectActionKind::kProcess;
    case InjectAction::kMisindex:
    case InjectAction::kBadframe:
    case InjectAction::kMisanswer:
    case InjectAction::kStall:
    case InjectAction::kCutoff:
    case InjectAction::kTrickle: return InjectActionKind::kProtocol;
    case InjectAction::kThrow: return InjectActionKind::kException;
  }
  return InjectActionKind::kProcess;
}

void FaultInjection::At(InjectStep here, int index) const {
  if (!Targets(here, index) || KindOf(action) != InjectActionKind::kProcess) return;
  switch (action) {
    case InjectAction::kSigkill: raise(SIGKILL); break;
    case InjectAction::kExit3: _exit(3);
    case InjectAction::kSigsegv: {
      const rlimit no_core{0, 0};
      setrlimit(RLIMIT_CORE, &no_core);
      signal(SIGSEGV, SIG_DFL);  // past any sanitizer's handler
      raise(SIGSEGV);
      break;
    }
    case InjectAction::kHang:
      for (;;) pause();
    default: break;  // protocol and exception actions act where the worker answers or samples
  }
}

Result<FaultInjection> FaultInjectionFromEnv() {
  const char* text = std::getenv(kInjectEnv);
  FaultInjection injection;
  if (text == nullptr || *text == '\0') return injection;
  const std::string spec = text;
  auto bad = [&] {
    return InvalidArgumentError(
        std::string(kInjectEnv) + " is '" + spec + "'; expected STEP:ACTION[:WORKER] with STEP one of " +
        Join(kInjectSteps, InjectStepName) + " and ACTION one of " + Join(kProcessActions, InjectActionName) + ", " +
        Join(kProtocolActions, InjectActionName) + ", " + Join(kExceptionActions, InjectActionName) + " (" +
        Join(kProtocolActions, InjectActionName) + " at after_write or after_answer only; " +
        Join(kExceptionActions, InjectActionName) + " at mid_write only)");
  };
  const size_t first = spec.find(':');
  if (first == std::string::npos) return bad();
  const size_t second = spec.find(':', first + 1);
  const std::optional<InjectStep> step = Named(spec.substr(0, first), kInjectSteps, InjectStepName);
  const std::optional<InjectAction> action =
      Named(spec.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1), kAllActions,
            InjectActionName);
  if (second != std::string::npos) {  // a worker index in 0..INT_MAX: digits only
    const std::optional<int> worker = ParseWholeNonNegative<int>(std::string_view(spec).substr(second + 1));
    if (!worker) return bad();
    injection.worker = *worker;
  }
  if (!step || !action) return bad();
  switch (KindOf(*action)) {
    case InjectActionKind::kProcess: break;
    case InjectActionKind::kProtocol:
      if (*step != InjectStep::kAfterWrite && *step != InjectStep::kAfterAnswer) return bad();
      break;
    case InjectActionKind::kException:
      if (*step != InjectStep::kMidWrite) return bad();
      break;
  }
  injection.step = step;
  injection.action = *action;
  return injection;
}

void MarkInjectedFaultStarted() {
  const char* path = std::getenv(kInjectStartedEnv);
  if (path == nullptr) return;
  UniqueFd created(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));  // only its existence matters
}

FaultInjection InjectionInWorker() {
  Result<FaultInjection> injection = FaultInjectionFromEnv();
  return injection.ok() ? *injection : FaultInjection{};
}

}  // namespace faultline
