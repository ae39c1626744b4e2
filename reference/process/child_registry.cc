// Implements the registry of child entry points.
#include "reference/process/child_registry.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstring>
#include <map>

namespace faultline {
namespace {

std::map<std::string, ChildMain>& Registry() {
  static auto* registry = new std::map<std::string, ChildMain>();
  return *registry;
}

UncaughtInChildHandler g_uncaught_handler = nullptr;

}  // namespace

bool RegisterChildMain(const std::string& name, ChildMain main) {
  Registry()[name] = main;
  return true;
}

bool HasChildEntry(const std::string& name) { return Registry().count(name) > 0; }

bool MaybeRunRegisteredChild(int argc, char** argv, int* exit_code) {
  if (argc < 2 || std::strncmp(argv[1], kChildFlag, std::strlen(kChildFlag)) != 0) return false;
  std::string name = argv[1] + std::strlen(kChildFlag);
  auto it = Registry().find(name);
  if (it == Registry().end()) {
    std::fprintf(stderr, "faultline: no child entry point named '%s' in this binary\n", name.c_str());
    *exit_code = 127;
    return true;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  *exit_code = kUncaughtExceptionExitCode;
  try {
    *exit_code = it->second(args);
  } catch (abi::__forced_unwind&) {
    throw;  // pthread_exit or cancellation: glibc aborts if it is swallowed
  } catch (...) {
    // Caught, the exception ends the child with a report instead of
    // std::terminate's SIGABRT, which told the parent only "killed by signal 6".
    if (g_uncaught_handler != nullptr) {
      g_uncaught_handler(name);
    } else {
      std::fprintf(stderr, "faultline: child entry point '%s' let an exception escape\n", name.c_str());
    }
  }
  return true;
}

void SetUncaughtInChildHandler(UncaughtInChildHandler handler) { g_uncaught_handler = handler; }

}  // namespace faultline
