// Implements the repro command line's parsing and variant selection.
#include "repro/cli.h"

#include <cstdlib>

#include <CLI/CLI.hpp>

#include "reference/base/parse_int.h"

namespace faultline {
namespace repro {

std::optional<Command> ParseCommandLine(int argc, const char* const* argv, std::ostream& out, std::ostream& err,
                                        int* exit_code) {
  CLI::App app{"faultline repro: reproduce documented CUDA x multiprocessing failures and validate their fixes"};
  app.footer(
      "Exit status: 0 every outcome matched; 1 one did not (or stdout could not be written); 2 usage error; "
      "3 every variant that ran "
      "matched but some could not run on this machine (they need 2 GPUs); 4 --runtime cuda and no usable "
      "CUDA device (nothing ran)");
  app.require_subcommand(1);
  // CLI11 names no unknown command ("A subcommand is required"): say which.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "list" && first != "run" && first != "all") {
      err << "repro: unknown command '" << first << "'; expected list, run or all (repro --help)\n";
      *exit_code = kExitUsage;
      return std::nullopt;
    }
  }
  Command command;
  // Read as text: CLI11 says only "Could not convert" for "abc", and
  // saturates numbers past int's range.
  std::string repeat_text = "1";
  // --runtime's default: FAULTLINE_RUNTIME (as device_bench reads it), else auto.
  const char* runtime_env = std::getenv("FAULTLINE_RUNTIME");
  std::string runtime_text = runtime_env != nullptr && *runtime_env != '\0' ? runtime_env : "auto";
  const std::string repeat_help = "Run each variant N times, each in a fresh process; exit 1 if any run did not match";
  const std::string runtime_help =
      "simcuda, cuda or auto (cuda when a GPU is present); default FAULTLINE_RUNTIME, else auto";

  CLI::App* list = app.add_subcommand("list", "List the documented failures and their variants");
  list->add_flag("--json", command.json, "Print JSON for machines");
  CLI::App* run = app.add_subcommand("run", "Run one failure's variants");
  run->add_option("failure", command.failure_id, "Failure id, e.g. F1")->required();
  run->add_option("--variant", command.variant,
                  "legacy, fixed, workaround or a listed variant name; a family selects its members "
                  "(legacy runs legacy-spawn too). Default: all");
  run->add_option("--runtime", runtime_text, runtime_help)->check(CLI::IsMember({"simcuda", "cuda", "auto"}));
  run->add_flag("--json", command.json, "Print JSON for machines");
  run->add_option("--repeat", repeat_text, repeat_help)->type_name("N");
  const std::string upstream_help =
      "Run the upstream variants instead: the real PyPI releases before and after the fix, over drop-in "
      "simcuda (repro/upstream/upstream.py; installs cached venvs under ~/.cache/faultline)";
  CLI::Option* run_upstream = run->add_flag("--upstream", command.upstream, upstream_help);
  run->add_option("--with", command.withs,
                  "With --upstream: the user's source tree or wheel of package NAME in place of the pinned release "
                  "(repeatable); 'reproduced' means the patch does not fix it, 'passed' that it does")
      ->type_name("NAME=PATH")
      ->needs(run_upstream);
  CLI::App* all = app.add_subcommand("all", "Run every variant of every failure");
  all->add_option("--runtime", runtime_text, runtime_help)->check(CLI::IsMember({"simcuda", "cuda", "auto"}));
  all->add_flag("--json", command.json, "Print JSON for machines");
  all->add_option("--repeat", repeat_text, repeat_help)->type_name("N");
  all->add_flag("--upstream", command.upstream, upstream_help);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    *exit_code = app.exit(e, out, err) == 0 ? 0 : kExitUsage;
    return std::nullopt;
  }
  if (list->parsed()) {
    command.kind = Command::Kind::kList;
    return command;
  }
  command.kind = run->parsed() ? Command::Kind::kRun : Command::Kind::kAll;
  if (run->count("--variant") > 0 && command.variant.empty()) {
    err << "repro: --variant is ''; expected a variant name (leave --variant out to run every variant)\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  const std::optional<int> repeat = ParseWhole<int>(repeat_text);
  if (!repeat || *repeat < 1) {
    err << "repro: --repeat is '" << repeat_text << "'; expected a number of runs in 1..2147483647\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  command.repeat = *repeat;
  // A --runtime given was checked by CLI11; a default from the environment is checked here.
  const bool given = run->count("--runtime") + all->count("--runtime") > 0;
  if (command.upstream) {
    if (given) {
      err << "repro: --runtime does not apply to --upstream (the upstream variants run on drop-in simcuda)\n";
      *exit_code = kExitUsage;
      return std::nullopt;
    }
    return command;
  }
  Result<RuntimeKind> runtime = ParseRuntimeKind(runtime_text);
  if (!runtime.ok() || *runtime == RuntimeKind::kCpu) {
    err << "repro: " << (given ? "--runtime" : "FAULTLINE_RUNTIME") << " is '" << runtime_text
        << "'; expected simcuda, cuda or auto\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  command.runtime = *runtime;
  return command;
}

Result<std::vector<Selected>> SelectVariants(const Command& command, const std::vector<Failure>& failures) {
  std::vector<Selected> selected;
  bool found = command.kind == Command::Kind::kAll;
  for (const Failure& f : failures) {
    if (command.kind == Command::Kind::kRun && f.id != command.failure_id) continue;
    found = true;
    std::string names;
    const size_t before = selected.size();
    for (const Variant& v : f.variants) {
      names += (names.empty() ? "" : ", ") + v.name;
      if (VariantSelected(v.name, command.variant)) selected.push_back({&f, &v});
    }
    if (selected.size() == before) {
      return InvalidArgumentError("--variant is '" + command.variant + "'; " + f.id + " has " + names);
    }
  }
  if (!found) {
    return InvalidArgumentError("unknown failure '" + command.failure_id + "'; `repro list` shows the registered ones");
  }
  return selected;
}

std::vector<std::string> UpstreamArguments(const Command& command) {
  std::vector<std::string> args;
  if (command.kind == Command::Kind::kRun) {
    args = {"run", command.failure_id};
    if (!command.variant.empty()) args.insert(args.end(), {"--variant", command.variant});
    for (const std::string& with : command.withs) args.insert(args.end(), {"--with", with});
  } else {
    args = {"all"};
  }
  args.insert(args.end(), {"--repeat", std::to_string(command.repeat)});
  if (command.json) args.push_back("--json");
  return args;
}

}  // namespace repro
}  // namespace faultline
