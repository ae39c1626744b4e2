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

namespace faultline {
namespace {

template <size_t N>
std::string Join(const char* const (&words)[N]) {
  std::string joined;
  for (const char* word : words) joined += (joined.empty() ? "" : ", ") + std::string(word);
  return joined;
}

template <size_t N>
bool Known(const std::string& word, const char* const (&list)[N]) {
  for (const char* entry : list) {
    if (word == entry) return true;
  }
  return false;
}

}  // namespace

void FaultInjection::At(const char* here, int index) const {
  if (!Targets(here, index)) return;
  if (action == "sigkill") raise(SIGKILL);
  if (action == "exit3") _exit(3);
  if (action == "sigsegv") {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL);  // past any sanitizer's handler
    raise(SIGSEGV);
  }
  if (action == "hang") {
    for (;;) pause();
  }
}

Result<FaultInjection> FaultInjectionFromEnv() {
  const char* text = std::getenv(kInjectEnv);
  FaultInjection injection;
  if (text == nullptr || *text == '\0') return injection;
  const std::string spec = text;
  auto bad = [&] {
    return InvalidArgumentError(std::string(kInjectEnv) + " is '" + spec +
                                "'; expected STEP:ACTION[:WORKER] with STEP one of " + Join(kInjectSteps) +
                                " and ACTION one of " + Join(kProcessActions) + ", " + Join(kProtocolActions) +
                                ", " + Join(kExceptionActions) + " (" + Join(kProtocolActions) +
                                " at after_write or after_answer only; " + Join(kExceptionActions) +
                                " at mid_write only)");
  };
  const size_t first = spec.find(':');
  if (first == std::string::npos) return bad();
  const size_t second = spec.find(':', first + 1);
  injection.step = spec.substr(0, first);
  injection.action = spec.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  if (second != std::string::npos) {  // a worker index in 0..INT_MAX: digits only
    const std::optional<int> worker = ParseWholeNonNegative<int>(std::string_view(spec).substr(second + 1));
    if (!worker) return bad();
    injection.worker = *worker;
  }
  const bool breaks_protocol = Known(injection.action, kProtocolActions);
  const bool throws = Known(injection.action, kExceptionActions);
  if (!Known(injection.step, kInjectSteps) || !(breaks_protocol || throws || Known(injection.action, kProcessActions))) {
    return bad();
  }
  if (breaks_protocol && injection.step != "after_write" && injection.step != "after_answer") return bad();
  if (throws && injection.step != "mid_write") return bad();
  return injection;
}

void MarkInjectedFaultStarted() {
  const char* path = std::getenv(kInjectStartedEnv);
  if (path == nullptr) return;
  const int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
}

FaultInjection InjectionInWorker() {
  Result<FaultInjection> injection = FaultInjectionFromEnv();
  return injection.ok() ? *injection : FaultInjection{};
}

}  // namespace faultline
