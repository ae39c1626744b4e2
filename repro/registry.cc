// Implements the failure registry.
#include "repro/registry.h"

#include <algorithm>

namespace faultline {
namespace repro {
namespace {

std::vector<Failure>& Registry() {
  static auto* failures = new std::vector<Failure>();
  return *failures;
}

}  // namespace

const char* ExpectationName(Expectation expectation) {
  return expectation == Expectation::kReproduces ? "reproduces" : "passes";
}

bool RegisterFailure(Failure failure) {
  Registry().push_back(std::move(failure));
  return true;
}

std::vector<Failure> Failures() {
  std::vector<Failure> sorted = Registry();
  std::sort(sorted.begin(), sorted.end(), [](const Failure& a, const Failure& b) { return a.id < b.id; });
  return sorted;
}

bool Matches(Expectation expected, const Outcome& outcome) {
  return expected == Expectation::kReproduces ? outcome.reproduced : outcome.passed && !outcome.reproduced;
}

}  // namespace repro
}  // namespace faultline
