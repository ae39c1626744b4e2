// Fuzzes the `repro` command line (repro/cli.h): parsing and variant
// selection, without running any variant. Feeds: the input split at '\0'
// into the arguments after "repro"; ParseCommandLine, then SelectVariants
// over a registry of three failures named like the real ones (registered
// below; their variants never run). Asserts: nothing crashes or throws; a
// parse ends in a command, in help (exit 0, printed on out) or in a usage
// error (exit 2, printed on err); a command has --repeat >= 1 and a
// resolved runtime; a selection holds exactly the variants of the chosen
// failure(s) that VariantSelected accepts, in registry order, and an error
// names the unknown failure or the variant filter.
#include <sstream>

#include "properties/fuzz/fuzz_support.h"
#include "repro/cli.h"

namespace faultline {
namespace repro {
namespace {

Variant Named(const std::string& name, Expectation expected) {
  const auto never = [](RuntimeKind) { return Outcome{}; };
  if (expected == Expectation::kPasses) return Passes(name, "never runs", never);
  return Reproduces(name, "never runs", OnEveryRuntime(Signature{"x", 0, "x", "x", "x"}),
                    [](RuntimeKind, const Signature&) { return Outcome{}; });
}

const bool kRegistered =
    RegisterFailure({"F1",
                     "first",
                     {Named("legacy", Expectation::kReproduces), Named("legacy-spawn", Expectation::kReproduces),
                      Named("fixed", Expectation::kPasses), Named("workaround", Expectation::kPasses)}}) &&
    RegisterFailure(
        {"F2", "second", {Named("legacy", Expectation::kReproduces), Named("fixed", Expectation::kPasses)}}) &&
    RegisterFailure(
        {"F10", "third", {Named("legacy-fork", Expectation::kReproduces), Named("fixed-fork", Expectation::kPasses)}});

void CheckSelection(const Command& command, const std::vector<Failure>& failures) {
  Result<std::vector<Selected>> selected = SelectVariants(command, failures);
  if (!selected.ok()) {
    const std::string& m = selected.status().message();
    FUZZ_CHECK(selected.status().code() == StatusCode::kInvalidArgument, selected.status().ToString());
    FUZZ_CHECK(m.rfind("--variant is '" + command.variant + "'", 0) == 0 ||
                   m.rfind("unknown failure '" + command.failure_id + "'", 0) == 0,
               m);
    return;
  }
  std::vector<std::pair<const Failure*, const Variant*>> expected;
  for (const Failure& f : failures) {
    if (command.kind == Command::Kind::kRun && f.id != command.failure_id) continue;
    for (const Variant& v : f.variants) {
      if (VariantSelected(v.name, command.variant)) expected.push_back({&f, &v});
    }
  }
  FUZZ_CHECK(!expected.empty() || failures.empty(), "an empty selection was not an error");
  FUZZ_CHECK(selected->size() == expected.size(), "selected " + std::to_string(selected->size()) +
                                                      " variants, "
                                                      "expected " +
                                                      std::to_string(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    FUZZ_CHECK((*selected)[i].failure == expected[i].first && (*selected)[i].variant == expected[i].second,
               "selection " + std::to_string(i));
  }
}

}  // namespace
}  // namespace repro
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  using namespace faultline::repro;
  // `--runtime auto` probes for a GPU in a forked child unless CUDA was
  // already touched in this process; touch it once so the probe answers
  // in-process instead of forking for every input.
  static const bool touched = [] {
    (void)GetRuntime(RuntimeKind::kCuda).GetDeviceCount();  // its answer does not matter here
    return true;
  }();
  (void)touched;
  FUZZ_CHECK(kRegistered, "registry");
  static const std::vector<Failure> failures = Failures();

  std::vector<std::string> args = {"repro"};
  for (std::string_view part :
       fuzz::Split(std::string_view(reinterpret_cast<const char*>(data), size), std::string_view("\0", 1), 64)) {
    args.emplace_back(part);
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  std::ostringstream out, err;
  int exit_code = -1;
  const std::optional<Command> command =
      ParseCommandLine(static_cast<int>(argv.size()), argv.data(), out, err, &exit_code);
  if (!command) {
    if (exit_code == 0) {
      FUZZ_CHECK(!out.str().empty() && err.str().empty(), "help: " + out.str() + err.str());
    } else {
      FUZZ_CHECK(exit_code == kExitUsage && !err.str().empty(), std::to_string(exit_code) + ": " + err.str());
    }
    return 0;
  }
  FUZZ_CHECK(exit_code == -1 && out.str().empty() && err.str().empty(), "a command that printed or set an exit code");
  if (command->kind == Command::Kind::kList) return 0;
  FUZZ_CHECK(command->repeat >= 1, "repeat " + std::to_string(command->repeat));
  FUZZ_CHECK(command->runtime != RuntimeKind::kCpu, "runtime cpu is not a repro runtime");
  FUZZ_CHECK(command->kind == Command::Kind::kRun || command->variant.empty(), "all with a variant filter");
  CheckSelection(*command, failures);
  return 0;
}
