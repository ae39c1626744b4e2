// Fuzzes the `sample` command line (reference/cli/sample_cli.h). Feeds: the
// input split at '\0' into the arguments after "sample"; "@GRAPH" in an
// argument becomes a small weighted graph folder, "@PLAIN" one without
// weights and "@SEEDS" a seeds .npy file, so inputs can reach sampling.
// ParseSampleArgs, then BuildCommand, then (when the request is small:
// fanouts <= 64 with --replace, at most 8 threads) RunCommand and the
// output; the whole of SampleMain runs on the same arguments. Asserts:
// nothing crashes; a parse ends in help (exit 0) or one "sample: ... (see
// --help)" line (exit 2); a built command satisfies every checked bound
// (fanouts in [-1, 2^31-1], seeds in range, threads >= 1, weights present
// when weighted); a run has one layer per fanout, each starting from the
// previous layer's unique nodes; SampleMain's exit code and output agree.
#include <sys/stat.h>

#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "properties/fuzz/fuzz_support.h"
#include "reference/cli/sample_cli.h"
#include "reference/graph/npy.h"

namespace faultline {
namespace {

struct Files {
  std::string graph, plain, seeds;
};

const Files& TestFiles() {
  static const Files files = [] {
    Files f{fuzz::ScratchDir() + "/graph", fuzz::ScratchDir() + "/plain", fuzz::ScratchDir() + "/seeds.npy"};
    // 6 nodes; node 5 has no in-edges, node 0 has three.
    const std::vector<int64_t> indptr = {0, 3, 5, 6, 8, 9, 9}, indices = {1, 2, 4, 0, 3, 5, 1, 2, 0};
    const std::vector<float> weights = {1, 0, 2.5f, 1, 1, 3, 0, 1, 0.5f};
    Result<CscGraph> weighted = CscGraph::Create(indptr, indices, weights);
    Result<CscGraph> plain = CscGraph::Create(indptr, indices);
    FUZZ_CHECK(weighted.ok() && plain.ok(), "test graphs");
    FUZZ_CHECK(mkdir(f.graph.c_str(), 0700) == 0 && mkdir(f.plain.c_str(), 0700) == 0, "mkdir");
    FUZZ_CHECK(weighted->Save(f.graph).ok() && plain->Save(f.plain).ok(), "saving the test graphs");
    FUZZ_CHECK(npy::WriteNpyInt(f.seeds, {0, 5, 3, 3}, npy::DType::kInt32).ok(), "seeds file");
    return f;
  }();
  return files;
}

void ReplaceAll(std::string* text, const std::string& token, const std::string& value) {
  for (size_t at = text->find(token); at != std::string::npos; at = text->find(token, at + value.size())) {
    text->replace(at, token.size(), value);
  }
}

int RunSampleMain(const std::vector<const char*>& argv, std::string* out, std::string* err) {
  std::ostringstream o, e;
  const int code = cli::SampleMain(static_cast<int>(argv.size()), argv.data(), o, e, /*err_is_tty=*/false);
  *out = o.str();
  *err = e.str();
  return code;
}

void CheckCommand(const cli::SampleCommand& c) {
  FUZZ_CHECK(c.graph.has_value(), "no graph");
  FUZZ_CHECK(!c.fanouts.empty(), "no fanouts");
  for (int64_t f : c.fanouts) FUZZ_CHECK(f >= -1 && f <= std::numeric_limits<int32_t>::max(), std::to_string(f));
  for (int64_t s : c.seeds) FUZZ_CHECK(s >= 0 && s < c.graph->num_nodes(), "seed out of range: " + std::to_string(s));
  FUZZ_CHECK(c.threads >= 1, "threads " + std::to_string(c.threads));
  FUZZ_CHECK(!c.weighted || c.graph->has_weights(), "weighted without weights");
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace faultline;
  const Files& files = TestFiles();
  // `--runtime auto` probes for a GPU in a forked child unless CUDA was
  // already touched in this process; touch it once so the probe answers
  // in-process instead of forking for every input.
  static const bool touched = [] {
    (void)GetRuntime(RuntimeKind::kCuda).GetDeviceCount();  // its answer does not matter here
    return true;
  }();
  (void)touched;
  std::vector<std::string> args = {"sample"};
  for (std::string_view part :
       fuzz::Split(std::string_view(reinterpret_cast<const char*>(data), size), std::string_view("\0", 1), 64)) {
    std::string arg(part);
    ReplaceAll(&arg, "@GRAPH", files.graph);
    ReplaceAll(&arg, "@PLAIN", files.plain);
    ReplaceAll(&arg, "@SEEDS", files.seeds);
    args.push_back(std::move(arg));
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  std::ostringstream out, err;
  cli::SampleArgs parsed;
  const std::optional<int> parse_exit =
      cli::ParseSampleArgs(static_cast<int>(argv.size()), argv.data(), out, err, &parsed);
  if (parse_exit) {
    if (*parse_exit == cli::kExitOk) {
      FUZZ_CHECK(out.str().find("Usage") != std::string::npos && err.str().empty(), "help: " + out.str());
    } else {
      FUZZ_CHECK(*parse_exit == cli::kExitUsage, std::to_string(*parse_exit));
      const std::string e = err.str();
      const std::string tail = " (see --help)\n";
      FUZZ_CHECK(e.rfind("sample: ", 0) == 0 && e.size() >= tail.size() &&
                     e.compare(e.size() - tail.size(), tail.size(), tail) == 0,
                 "usage error: " + e);
    }
    return 0;
  }
  FUZZ_CHECK(out.str().empty() && err.str().empty(), "a successful parse printed something");

  std::string main_out, main_err;
  Result<cli::SampleCommand> command = cli::BuildCommand(parsed.flags);
  if (!command.ok()) {
    FUZZ_CHECK(!command.status().message().empty(), "empty error");
    const int code = RunSampleMain(argv, &main_out, &main_err);
    FUZZ_CHECK(
        code == cli::kExitUsage && main_out.empty() && main_err == "sample: " + command.status().message() + "\n",
        "SampleMain disagrees with BuildCommand: exit " + std::to_string(code) + ", " + main_err);
    return 0;
  }
  const cli::SampleCommand& c = *command;
  CheckCommand(c);
  bool small = c.threads <= 8;
  for (int64_t f : c.fanouts) small = small && (!c.replace || f <= 64);
  if (!small) return 0;

  Result<std::vector<SampledLayer>> layers = cli::RunCommand(c);
  const int code = RunSampleMain(argv, &main_out, &main_err);
  if (!layers.ok()) {
    FUZZ_CHECK(code == cli::kExitRuntimeFailure, "SampleMain exit " + std::to_string(code) + " after a failed run");
    return 0;
  }
  FUZZ_CHECK(layers->size() == c.fanouts.size(), "one layer per fanout");
  for (size_t k = 0; k < layers->size(); ++k) {
    const std::vector<int64_t>& expected_seeds = k == 0 ? c.seeds : (*layers)[k - 1].unique_nodes;
    FUZZ_CHECK((*layers)[k].subgraph.seeds == expected_seeds, "layer " + std::to_string(k) + " seeds");
  }
  FUZZ_CHECK(code == cli::kExitOk, "SampleMain exit " + std::to_string(code) + ": " + main_err);
  const std::string expected_out =
      parsed.json ? cli::LayersToJson(*layers).dump() + "\n" : cli::FormatSummary(c, *layers);
  FUZZ_CHECK(main_out == expected_out, "SampleMain printed something else than the run");
  return 0;
}
