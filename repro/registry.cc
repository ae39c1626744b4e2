// Implements the failure registry.
#include "repro/registry.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <regex>

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

Variant Reproduces(std::string name, std::string scenario, std::function<Signature(RuntimeKind)> signature,
                   std::function<Outcome(RuntimeKind, const Signature&)> run, VariantEnv env) {
  VariantRun with_signature = [run = std::move(run), signature](RuntimeKind runtime) {
    return run(runtime, signature(runtime));
  };
  return Variant{std::move(name), std::move(scenario), std::move(with_signature), std::move(env),
                 MustReproduce{std::move(signature)}};
}

Variant Passes(std::string name, std::string scenario, std::function<Outcome(RuntimeKind)> run, VariantEnv env) {
  return Variant{std::move(name), std::move(scenario), std::move(run), std::move(env), MustPass{}};
}

std::function<Signature(RuntimeKind)> OnEveryRuntime(Signature signature) {
  return [signature = std::move(signature)](RuntimeKind) { return signature; };
}

nlohmann::json SignatureToJson(const Signature& s) {
  auto text = [](const ExpectedText& t) { return nlohmann::json{{"text", t.text}, {"pattern", t.is_pattern}}; };
  nlohmann::json j = {{"name", s.name}, {"message", text(s.message)}, {"process", text(s.process)}, {"step", s.step}};
  if (s.code) j["code"] = *s.code;
  return j;
}

nlohmann::json ErrorToJson(const std::optional<ObservedError>& e) {
  if (!e) return nullptr;
  return {{"name", e->name}, {"code", e->code}, {"message", e->message}, {"process", e->process}, {"step", e->step}};
}

bool VariantSelected(const std::string& variant, const std::string& filter) {
  return filter.empty() || variant == filter || variant.rfind(filter + "-", 0) == 0;
}

ExpectedText Pattern(std::string regex) {
  ExpectedText pattern(std::move(regex));
  pattern.is_pattern = true;
  return pattern;
}

std::string Quote(std::string_view text) {
  std::string quoted;
  for (char c : text) {
    if (c != '\0' && std::strchr(R"(\^$.|?*+()[]{})", c) != nullptr) quoted += '\\';
    quoted += c;
  }
  return quoted;
}

ExpectedText ProcessWithPid(const std::string& label) { return Pattern(label + R"( \(pid \d+\))"); }

std::string SignatureMismatch(const Signature& signature, const ObservedError& error) {
  std::string why;
  auto differs = [&why](const std::string& field, const std::string& want, const std::string& got) {
    why += field + ": expected " + want + ", observed " + got + "\n";
  };
  auto quoted = [](const std::string& text) { return "\"" + text + "\""; };
  auto check = [&](const std::string& field, const ExpectedText& want, const std::string& got) {
    if (!want.is_pattern) {
      if (got != want.text) differs(field, quoted(want.text), quoted(got));
      return;
    }
    try {
      if (!std::regex_match(got, std::regex(want.text))) differs(field, "a match of /" + want.text + "/", quoted(got));
    } catch (const std::regex_error& e) {
      differs(field, "a match of /" + want.text + "/ (not a valid regex: " + e.what() + ")", quoted(got));
    }
  };
  if (error.name != signature.name) differs("name", quoted(signature.name), quoted(error.name));
  if (signature.code && error.code != *signature.code) {
    differs("code", std::to_string(*signature.code), std::to_string(error.code));
  }
  check("message", signature.message, error.message);
  check("process", signature.process, error.process);
  if (error.step != signature.step) differs("step", quoted(signature.step), quoted(error.step));
  return why;
}

bool Matches(const Signature& signature, const ObservedError& error) {
  return SignatureMismatch(signature, error).empty();
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kReproduced: return "reproduced";
    case Verdict::kPassed: return "passed";
    case Verdict::kFailed: return "failed";
    case Verdict::kNotRun: return "not run";
  }
  return "?";
}

std::optional<Verdict> ParseVerdict(const std::string& name) {
  for (Verdict v : {Verdict::kReproduced, Verdict::kPassed, Verdict::kFailed, Verdict::kNotRun}) {
    if (name == VerdictName(v)) return v;
  }
  return std::nullopt;
}

bool Matches(Expectation expected, const Outcome& outcome) {
  switch (expected) {
    case Expectation::kReproduces: return outcome.verdict == Verdict::kReproduced;
    case Expectation::kPasses: return outcome.verdict == Verdict::kPassed;
  }
  return false;
}

}  // namespace repro
}  // namespace faultline
