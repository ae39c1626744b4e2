// Test-only fault injection for loader workers (docs/reliability.md): the
// environment variable FAULTLINE_LOADER_INJECT = "STEP:ACTION[:WORKER]"
// makes a worker (every one, or only worker WORKER) fail at STEP by ACTION.
// Production never sets it. The step and action lists live here, not in the
// tests, so that the fault matrix the tests run cannot drift from what the
// worker accepts.
#ifndef FAULTLINE_REFERENCE_LOADER_FAULT_INJECTION_H_
#define FAULTLINE_REFERENCE_LOADER_FAULT_INJECTION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "reference/base/status.h"

namespace faultline {

inline constexpr char kInjectEnv[] = "FAULTLINE_LOADER_INJECT";
// A path: a worker that stalls or trickles its answer creates this file
// once the first bytes of that answer are sent, so that a test can start
// a short timeout then and time the fault alone (not the worker's start or
// the minibatches before it).
inline constexpr char kInjectStartedEnv[] = "FAULTLINE_LOADER_INJECT_STARTED";
// The steps of a worker's life, in order.
enum class InjectStep { kStarted, kBeforeRestore, kAfterRestore, kAfterTask, kMidWrite, kAfterWrite, kAfterAnswer };
inline constexpr InjectStep kInjectSteps[] = {
    InjectStep::kStarted,  InjectStep::kBeforeRestore, InjectStep::kAfterRestore, InjectStep::kAfterTask,
    InjectStep::kMidWrite, InjectStep::kAfterWrite,    InjectStep::kAfterAnswer};

// What a worker does at the step, in three kinds (InjectActionKind).
// Process actions end or stall the process, at any step: sigkill, sigsegv,
// exit3, hang. Protocol actions break the protocol instead, at after_write
// (every answer) or after_answer (every answer after the worker's first,
// which it sends as usual) only: misindex writes another minibatch index
// into the finished slot and answers as if nothing happened (DataLoader's
// read_shared_memory check); badframe answers with a frame header whose
// length is -1; misanswer answers for another minibatch (its own + 1000);
// stall sends the first 8 bytes of its answer and then hangs; cutoff sends
// them and exits with 3; trickle sends its answer one byte every 2 ms, an
// error report of 1 MiB that would take 35 minutes (its bytes never stop
// for long, so only a timeout that is checked while bytes arrive ends it).
// The exception action, at mid_write only: throw makes the next chunk the
// sampler takes after the first layer was written throw std::bad_alloc, in
// whichever of its threads takes it (a helper's exception is rethrown in
// the worker's thread), as an allocation that fails in the sampler does.
enum class InjectAction {
  kSigkill,
  kSigsegv,
  kExit3,
  kHang,  // process
  kMisindex,
  kBadframe,
  kMisanswer,
  kStall,
  kCutoff,
  kTrickle,  // protocol
  kThrow,    // exception
};
enum class InjectActionKind { kProcess, kProtocol, kException };
inline constexpr InjectAction kProcessActions[] = {InjectAction::kSigkill, InjectAction::kSigsegv, InjectAction::kExit3,
                                                   InjectAction::kHang};
inline constexpr InjectAction kProtocolActions[] = {InjectAction::kMisindex,  InjectAction::kBadframe,
                                                    InjectAction::kMisanswer, InjectAction::kStall,
                                                    InjectAction::kCutoff,    InjectAction::kTrickle};
inline constexpr InjectAction kExceptionActions[] = {InjectAction::kThrow};

// The names FAULTLINE_LOADER_INJECT spells them with: "before_restore",
// "sigkill", ...
const char* InjectStepName(InjectStep step);
const char* InjectActionName(InjectAction action);
InjectActionKind KindOf(InjectAction action);

struct FaultInjection {
  std::optional<InjectStep> step;  // empty: nothing injected
  InjectAction action = InjectAction::kSigkill;
  int worker = -1;  // -1: every worker

  // Whether the injection is for worker `index` at step `here`.
  bool Targets(InjectStep here, int index) const { return step == here && (worker < 0 || worker == index); }
  // Fails the calling worker `index` here when `here` is the injected step.
  void At(InjectStep here, int index) const;
  // Whether the calling worker `index` is to act by `how` (throw) at `here`.
  bool Breaks(InjectAction how, InjectStep here, int index) const { return action == how && Targets(here, index); }
  // Whether the calling worker `index`, which has sent `answered` answers,
  // is to break the protocol by `how` (one of kProtocolActions) in the
  // answer it is about to send.
  bool BreaksAnswer(InjectAction how, int index, int64_t answered) const {
    return action == how &&
           (Targets(InjectStep::kAfterWrite, index) || (Targets(InjectStep::kAfterAnswer, index) && answered > 0));
  }
};

// Creates kInjectStartedEnv's file, when the variable is set.
void MarkInjectedFaultStarted();

// Parses FAULTLINE_LOADER_INJECT; an unset variable injects nothing, a
// malformed one is an InvalidArgument error saying what is expected.
Result<FaultInjection> FaultInjectionFromEnv();
// The injection a worker applies (the parent validated the variable first).
FaultInjection InjectionInWorker();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_LOADER_FAULT_INJECTION_H_
