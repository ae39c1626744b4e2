// Provides named child entry points: a binary registers functions that a
// spawned (fork+exec'd) copy of itself runs instead of its normal main.
#ifndef FAULTLINE_REFERENCE_PROCESS_CHILD_REGISTRY_H_
#define FAULTLINE_REFERENCE_PROCESS_CHILD_REGISTRY_H_

#include <string>
#include <vector>

#include "reference/base/macros.h"

namespace faultline {

// The exit code of a forked child whose body, or a spawned child whose
// entry point, let an exception escape: EX_SOFTWARE (sysexits.h,
// "internal software error"), which no faultline child returns on purpose.
inline constexpr int kUncaughtExceptionExitCode = 70;

// A child entry point: receives the arguments after the entry name and
// returns the process exit code.
using ChildMain = int (*)(const std::vector<std::string>& args);

// The argv[1] prefix that selects a registered child entry point.
inline constexpr const char kChildFlag[] = "--faultline-child=";

// Registers `main` under `name`; returns true so it can run at static init.
bool RegisterChildMain(const std::string& name, ChildMain main);

// Whether this binary has an entry point named `name`.
bool HasChildEntry(const std::string& name);

// Runs the entry point named by argv[1] ("--faultline-child=NAME") if there is
// one and stores its exit code; returns false when argv names no child. A
// binary that spawns children (ChildProcess::Spawn, a data loader with
// start_method spawn) must call it first thing in main: its spawned copy
// runs main, and only this call turns it into the child.
// An entry point that lets an exception escape ends the child with
// kUncaughtExceptionExitCode instead of std::terminate's abort, after the
// handler below reports it (or, with none installed, a line on stderr
// naming the entry point). A thread's forced unwinding (pthread_exit,
// cancellation) is not an exception and goes on.
bool MaybeRunRegisteredChild(int argc, char** argv, int* exit_code);

// Called inside the catch block when entry point `entry` let an exception
// escape; it must not throw. reference/process installs one that sends the
// exception to the parent's transcript (ReportToParent).
using UncaughtInChildHandler = void (*)(const std::string& entry);
void SetUncaughtInChildHandler(UncaughtInChildHandler handler);

}  // namespace faultline

// Registers a child entry point at static-initialization time.
#define FL_REGISTER_CHILD(name, fn) \
  static const bool FL_CONCAT(fl_child_registered_, __LINE__) = ::faultline::RegisterChildMain(name, fn)

#endif  // FAULTLINE_REFERENCE_PROCESS_CHILD_REGISTRY_H_
