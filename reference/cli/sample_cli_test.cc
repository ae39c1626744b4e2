// Checks the sample command line in-process: list parsing, argument
// validation, the JSON layout and key order, and that negative fanouts pass
// through the flag parser.
#include "reference/cli/sample_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>

#include "reference/base/status_matchers.h"
#include "reference/graph/generators.h"
#include "reference/sampling/device_sampling.h"
#include "reference/sampling/multi_layer.h"

namespace faultline {
namespace cli {
namespace {

TEST(ParseIntListTest, ParsesCommaSeparatedIntegers) {
  EXPECT_EQ(*ParseIntList("10,5", "--fanouts"), (std::vector<int64_t>{10, 5}));
  EXPECT_EQ(*ParseIntList(" -1 , 0,7 ", "--fanouts"), (std::vector<int64_t>{-1, 0, 7}));
  EXPECT_EQ(*ParseIntList("42", "--seeds"), (std::vector<int64_t>{42}));
}

TEST(ParseIntListTest, NamesTheFlagAndTheBadItem) {
  for (const char* text : {"", " ", "1,,2", "1,x", "1.5", "1,2,", "+3", "99999999999999999999"}) {
    Result<std::vector<int64_t>> r = ParseIntList(text, "--fanouts");
    ASSERT_FALSE(r.ok()) << "'" << text << "'";
    EXPECT_EQ(r.status().message().rfind("--fanouts", 0), 0u) << r.status();
  }
  EXPECT_THAT(ParseIntList("1,x", "--seeds").status().message(), testing::HasSubstr("item 1 ('x') is not an integer"));
  // Digits past int64 are out of range, not "not an integer" (a new user's trial).
  EXPECT_THAT(ParseIntList("1,99999999999999999999", "--seeds").status().message(),
              testing::HasSubstr("item 1 ('99999999999999999999') is out of range; expected integers in "
                                 "-9223372036854775808..9223372036854775807"));
  EXPECT_THAT(ParseIntList("-", "--seeds").status().message(), testing::HasSubstr("('-') is not an integer"));
}

class SampleCliTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::string(std::getenv("TEST_TMPDIR")) + "/graph";
    ::mkdir(dir_.c_str(), 0755);
    Result<CscGraph> graph = GeneratePowerLaw(30, 200, 11, /*weighted=*/true);
    FL_ASSERT_OK(graph);
    FL_ASSERT_OK(graph->Save(dir_));
    graph_.emplace(std::move(graph).value());
  }

  SampleFlags Flags() const {
    SampleFlags f;
    f.graph = dir_;
    f.seeds = "0,29,3";
    f.fanouts = "3,-1";
    f.rng_seed = "9";
    return f;
  }

  // Runs SampleMain in-process; returns the exit code.
  int Main(std::vector<std::string> args, std::string* out, std::string* err) {
    args.insert(args.begin(), "sample");
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream o, e;
    const int code = SampleMain(static_cast<int>(argv.size()), argv.data(), o, e, /*err_is_tty=*/false);
    *out = o.str();
    *err = e.str();
    return code;
  }

  std::string dir_;
  std::optional<CscGraph> graph_;
};

TEST_F(SampleCliTest, BuildsAValidatedCommand) {
  SampleFlags f = Flags();
  f.runtime = "simcuda";
  f.placement = "pinned";
  f.weighted = true;
  Result<SampleCommand> c = BuildCommand(f);
  FL_ASSERT_OK(c);
  EXPECT_EQ(c->seeds, (std::vector<int64_t>{0, 29, 3}));
  EXPECT_EQ(c->fanouts, (std::vector<int64_t>{3, -1}));
  EXPECT_EQ(c->rng_seed, 9u);
  EXPECT_EQ(c->runtime, RuntimeKind::kSimCuda);
  EXPECT_EQ(c->placement, GraphPlacement::kPinnedHost);
  EXPECT_EQ(c->threads, 1);
  EXPECT_EQ(c->graph->num_nodes(), 30);
  f = Flags();
  f.threads = "4";
  c = BuildCommand(f);
  FL_ASSERT_OK(c);
  EXPECT_EQ(c->runtime, RuntimeKind::kCpu);
  EXPECT_EQ(c->threads, 4);
}

TEST_F(SampleCliTest, RejectsBadArgumentsNamingTheFlag) {
  struct Bad {
    void (*edit)(SampleFlags&);
    const char* message_start;
  };
  const Bad cases[] = {
      {[](SampleFlags& f) { f.seeds = "0,30"; }, "--seeds: seed 30 at position 1 is out of range"},
      {[](SampleFlags& f) { f.seeds = "-1"; }, "--seeds: seed -1 at position 0 is out of range"},
      {[](SampleFlags& f) { f.fanouts = "-2"; }, "--fanouts: fanout -2 at position 0 is invalid"},
      {[](SampleFlags& f) { f.fanouts = "2147483648"; }, "--fanouts: fanout 2147483648 at position 0 is invalid"},
      {[](SampleFlags& f) { f.fanouts = ""; }, "--fanouts is empty"},
      {[](SampleFlags& f) { f.rng_seed = "18446744073709551616"; }, "--rng-seed '18446744073709551616' is invalid"},
      {[](SampleFlags& f) { f.threads = "two"; }, "--threads 'two' is invalid"},
      {[](SampleFlags& f) { f.threads = "100000"; }, "--threads '100000' is invalid; expected an integer in 1..1024"},
      {[](SampleFlags& f) { f.seeds.reset(); }, "one of --seeds or --seeds-file is required"},
      {[](SampleFlags& f) { f.seeds_file = "x.npy"; }, "--seeds and --seeds-file were both given"},
      {[](SampleFlags& f) { f.seeds.reset(), f.seeds_file = "/nonexistent/x.npy"; }, "--seeds-file: cannot open"},
      {[](SampleFlags& f) { f.graph = ""; }, "--graph is required"},
      {[](SampleFlags& f) { f.runtime = "simcuda", f.threads = "2"; },
       "--threads applies to runtime cpu only; this is runtime simcuda, which samples with the device's threads"},
      {[](SampleFlags& f) { f.placement = "pinned"; },
       "--placement applies to a device runtime (simcuda, cuda or auto) only; this is runtime cpu, which reads the "
       "graph in host memory"},
  };
  for (const Bad& b : cases) {
    SampleFlags f = Flags();
    b.edit(f);
    Result<SampleCommand> c = BuildCommand(f);
    ASSERT_FALSE(c.ok()) << b.message_start;
    EXPECT_EQ(c.status().message().rfind(b.message_start, 0), 0u) << c.status();
  }
}

TEST_F(SampleCliTest, JsonHasTheDocumentedLayoutAndMatchesTheLibrary) {
  std::string out, err;
  ASSERT_EQ(Main({"--graph", dir_, "--seeds", "0,29,3", "--fanouts", "-1,2", "--rng-seed", "9", "--json"}, &out, &err),
            kExitOk)
      << err;
  Result<std::vector<SampledLayer>> expected =
      SampleMultiLayer(*graph_, {0, 29, 3}, {-1, 2}, SamplingOptions{false, false, 9, 1});
  FL_ASSERT_OK(expected);
  EXPECT_EQ(out, LayersToJson(*expected).dump() + "\n");
  // Keys in the documented order.
  EXPECT_EQ(out.rfind("{\"layers\":[{\"seeds\":[0,29,3],\"indptr\":[", 0), 0u) << out;
  const size_t indices = out.find("\"indices\"");
  const size_t edge_ids = out.find("\"original_edge_ids\"");
  EXPECT_LT(out.find("\"indptr\""), indices);
  EXPECT_LT(indices, edge_ids);
}

// A stream that takes nothing (a full disk) is a failure that says so.
TEST_F(SampleCliTest, AnOutputThatCannotBeWrittenIsAnError) {
  std::ostringstream out, err;
  out.setstate(std::ios::badbit);
  const std::vector<const char*> argv = {"sample",    "--graph", dir_.c_str(), "--seeds", "0",
                                         "--fanouts", "2",       "--rng-seed", "1",       "--json"};
  EXPECT_EQ(SampleMain(static_cast<int>(argv.size()), argv.data(), out, err, /*err_is_tty=*/false),
            kExitRuntimeFailure);
  EXPECT_EQ(err.str(), "sample: writing the result to stdout failed\n");
  std::ostringstream help_out, help_err;
  help_out.setstate(std::ios::badbit);
  const std::vector<const char*> help = {"sample", "--help"};
  EXPECT_EQ(SampleMain(static_cast<int>(help.size()), help.data(), help_out, help_err, /*err_is_tty=*/false),
            kExitRuntimeFailure);
  EXPECT_EQ(help_err.str(), "sample: writing the help to stdout failed\n");
}

TEST_F(SampleCliTest, SimcudaAndCpuThreadsPrintTheSameJson) {
  const std::vector<std::string> base = {"--graph",    dir_, "--seeds",   "5,6,7",      "--fanouts", "4,4",
                                         "--rng-seed", "3",  "--replace", "--weighted", "--json"};
  std::string baseline, err;
  ASSERT_EQ(Main(base, &baseline, &err), kExitOk) << err;
  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--threads", "2"}, {"--runtime", "simcuda"}, {"--runtime", "simcuda", "--placement", "pinned"}}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    std::string out;
    ASSERT_EQ(Main(args, &out, &err), kExitOk) << err;
    EXPECT_EQ(out, baseline) << extra[1];
  }
}

// RunCommand re-runs the library's hops to print progress between them; its
// layers must stay exactly those of SampleMultiLayer / SampleMultiLayerOnDevice.
TEST_F(SampleCliTest, RunCommandEqualsTheLibraryMultiLayerFunctions) {
  struct Case {
    const char* runtime;
    const char* option;  // --threads on cpu, --placement on simcuda
    bool replace;
  };
  for (const Case& run : {Case{"cpu", "1", false}, Case{"cpu", "3", true}, Case{"simcuda", "device", false},
                          Case{"simcuda", "pinned", true}}) {
    SampleFlags f = Flags();
    f.runtime = run.runtime;
    if (std::string(run.runtime) == "cpu") {
      f.threads = run.option;
    } else {
      f.placement = run.option;
    }
    f.weighted = true;
    f.replace = run.replace;
    Result<SampleCommand> c = BuildCommand(f);
    FL_ASSERT_OK(c);
    int progress_lines = 0;
    Result<std::vector<SampledLayer>> got = RunCommand(*c, [&](const std::string&) { ++progress_lines; });
    FL_ASSERT_OK(got);
    EXPECT_EQ(progress_lines, 4);  // before and after each of the two hops
    Result<std::vector<SampledLayer>> want = Status(InternalError("unset"));
    if (c->runtime == RuntimeKind::kCpu) {
      want =
          SampleMultiLayer(*c->graph, c->seeds, c->fanouts, SamplingOptions{c->replace, c->weighted, c->rng_seed, 1});
    } else {
      Result<DeviceGraph> g = DeviceGraph::Create(*c->graph, GetRuntime(c->runtime), c->placement);
      FL_ASSERT_OK(g);
      want = SampleMultiLayerOnDevice(*g, c->seeds, c->fanouts, SamplingOptions{c->replace, c->weighted, c->rng_seed});
    }
    FL_ASSERT_OK(want);
    ASSERT_EQ(got->size(), want->size());
    for (size_t k = 0; k < want->size(); ++k) {
      SCOPED_TRACE(std::string(run.runtime) + " " + run.option + " layer " + std::to_string(k));
      EXPECT_EQ((*got)[k].subgraph.seeds, (*want)[k].subgraph.seeds);
      EXPECT_EQ((*got)[k].subgraph.indptr, (*want)[k].subgraph.indptr);
      EXPECT_EQ((*got)[k].subgraph.indices, (*want)[k].subgraph.indices);
      EXPECT_EQ((*got)[k].subgraph.original_edge_ids, (*want)[k].subgraph.original_edge_ids);
      EXPECT_EQ((*got)[k].unique_nodes, (*want)[k].unique_nodes);
      EXPECT_EQ((*got)[k].compacted_indices, (*want)[k].compacted_indices);
    }
  }
}

// Under `bazel run` the binary starts in its runfiles folder: relative
// paths are the user's, from BUILD_WORKING_DIRECTORY.
TEST_F(SampleCliTest, RelativePathsAreTheCallersUnderBazelRun) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  std::vector<std::string> args = {"--graph", "graph",      "--seeds", "0,29,3", "--fanouts",
                                   "3",       "--rng-seed", "9",       "--json"};
  std::string out, err, expected;
  ASSERT_EQ(setenv("BUILD_WORKING_DIRECTORY", tmp.c_str(), 1), 0);
  const int code = Main(args, &out, &err);
  unsetenv("BUILD_WORKING_DIRECTORY");
  ASSERT_EQ(code, kExitOk) << err;
  args[1] = dir_;
  ASSERT_EQ(Main(args, &expected, &err), kExitOk) << err;
  EXPECT_EQ(out, expected);
}

TEST_F(SampleCliTest, FlagParserErrorsAreOneLineUsageErrors) {
  std::string out, err;
  EXPECT_EQ(Main({"--graph", dir_, "--seeds", "1", "--fanouts", "1", "--rng-seed", "1", "extra"}, &out, &err),
            kExitUsage);
  EXPECT_EQ(err.rfind("sample: ", 0), 0u) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_EQ(Main({"--help"}, &out, &err), kExitOk);
  EXPECT_NE(out.find("--fanouts"), std::string::npos);
}

}  // namespace
}  // namespace cli
}  // namespace faultline
