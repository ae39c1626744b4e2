// Implements the failure registry.
#include "repro/registry.h"

#include <algorithm>
#include <cstdlib>

#include <nlohmann/json.hpp>

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
  // F2 before F10: ids sort by their number, then as text.
  auto number = [](const std::string& id) { return std::strtol(id.c_str() + (id.empty() ? 0 : 1), nullptr, 10); };
  std::sort(sorted.begin(), sorted.end(), [&](const Failure& a, const Failure& b) {
    return number(a.id) != number(b.id) ? number(a.id) < number(b.id) : a.id < b.id;
  });
  return sorted;
}

const Variant* FindVariant(const std::string& id, const std::string& variant) {
  for (const Failure& f : Registry()) {
    if (f.id != id) continue;
    for (const Variant& v : f.variants) {
      if (v.name == variant) return &v;
    }
  }
  return nullptr;
}

nlohmann::json ErrorToJson(const std::optional<ObservedError>& e) {
  if (!e) return nullptr;
  return {{"name", e->name}, {"code", e->code}, {"message", e->message}, {"process", e->process}, {"step", e->step}};
}

bool VariantSelected(const std::string& variant, const std::string& filter) {
  return filter.empty() || variant == filter || variant.rfind(filter + "-", 0) == 0;
}

std::string SignatureMismatch(const Signature& signature, const ObservedError& error) {
  std::string why;
  auto differs = [&why](const std::string& field, const std::string& want, const std::string& got) {
    why += field + ": expected " + want + ", observed " + got + "\n";
  };
  if (!signature.name.empty() && error.name != signature.name) differs("name", signature.name, error.name);
  if (signature.code != 0 && error.code != signature.code) {
    differs("code", std::to_string(signature.code), std::to_string(error.code));
  }
  if (error.message.find(signature.message) == std::string::npos) {
    differs("message", "one containing \"" + signature.message + "\"", "\"" + error.message + "\"");
  }
  if (error.process.rfind(signature.process, 0) != 0) {
    differs("process", "\"" + signature.process + "...\"", "\"" + error.process + "\"");
  }
  if (!signature.step.empty() && error.step != signature.step) differs("step", signature.step, error.step);
  return why;
}

bool Matches(Expectation expected, const Outcome& outcome) {
  if (!outcome.not_run.empty()) return false;
  return expected == Expectation::kReproduces ? outcome.reproduced : outcome.passed && !outcome.reproduced;
}

}  // namespace repro
}  // namespace faultline
