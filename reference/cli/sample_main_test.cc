// Runs the built sample binary as a child process on graphs written to the
// test's temporary folder: its JSON equals the library's result, every
// runtime and thread count prints the same JSON, bad input exits 2 with a
// one-line message naming the problem, and --help documents the flags.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/graph/csc_graph.h"
#include "reference/graph/generators.h"
#include "reference/graph/npy.h"
#include "reference/runtime/runtime.h"
#include "reference/sampling/multi_layer.h"

extern char** environ;

namespace faultline {
namespace {

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string SampleBinary() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir != nullptr ? srcdir : ".") + "/faultline/reference/cli/sample";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// How one run of the binary ended.
struct ChildRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs the sample binary with `args`, its stdout and stderr sent to files.
// Runs the CLI with `args`; `env_overrides` ("NAME=value") replace those
// variables of this process's environment.
ChildRun RunSample(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides = {}) {
  const std::string out_path = TmpDir() + "/sample_stdout.txt";
  const std::string err_path = TmpDir() + "/sample_stderr.txt";
  const std::string binary = SampleBinary();
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view name(*entry, std::strcspn(*entry, "="));
    const bool overridden = std::any_of(env_overrides.begin(), env_overrides.end(), [&](const std::string& o) {
      return o.compare(0, name.size() + 1, std::string(name) + "=") == 0;
    });
    if (!overridden) env.push_back(*entry);
  }
  for (const std::string& o : env_overrides) env.push_back(const_cast<char*>(o.c_str()));
  env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  ChildRun run;
  if (rc != 0) {
    ADD_FAILURE() << "cannot spawn " << binary << ": " << std::strerror(rc);
    return run;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  EXPECT_TRUE(WIFEXITED(status)) << binary << " did not exit normally (status " << status << ")";
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = ReadFile(out_path);
  run.err = ReadFile(err_path);
  return run;
}

std::string Describe(const std::vector<std::string>& args, const ChildRun& run) {
  std::string text = "sample";
  for (const std::string& a : args) text += " " + a;
  return text + "\nexit " + std::to_string(run.exit_code) + "\nstdout: " + run.out + "\nstderr: " + run.err;
}

class SampleMainTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    weighted_dir_ = new std::string(TmpDir() + "/weighted_graph");
    unweighted_dir_ = new std::string(TmpDir() + "/unweighted_graph");
    for (const std::string* dir : {weighted_dir_, unweighted_dir_}) {
      ASSERT_EQ(::mkdir(dir->c_str(), 0755) == 0 || errno == EEXIST, true) << *dir;
    }
    Result<CscGraph> weighted = GeneratePowerLaw(50, 400, 3, /*weighted=*/true);
    Result<CscGraph> unweighted = GeneratePowerLaw(50, 400, 3, /*weighted=*/false);
    FL_ASSERT_OK(weighted);
    FL_ASSERT_OK(unweighted);
    FL_ASSERT_OK(weighted->Save(*weighted_dir_));
    FL_ASSERT_OK(unweighted->Save(*unweighted_dir_));
  }

  static std::string* weighted_dir_;
  static std::string* unweighted_dir_;
};

std::string* SampleMainTest::weighted_dir_ = nullptr;
std::string* SampleMainTest::unweighted_dir_ = nullptr;

TEST_F(SampleMainTest, JsonEqualsTheLibraryResult) {
  Result<CscGraph> graph = CscGraph::Load(*weighted_dir_);
  FL_ASSERT_OK(graph);
  const std::vector<int64_t> seeds = {0, 7, 7, 49, 12};
  const std::vector<int64_t> fanouts = {4, -1, 2};
  for (bool replace : {false, true}) {
    for (bool weighted : {false, true}) {
      std::vector<std::string> args = {"--graph",   *weighted_dir_, "--seeds",    "0,7,7,49,12",
                                       "--fanouts", "4,-1,2",       "--rng-seed", "18446744073709551615",
                                       "--json"};
      if (replace) args.push_back("--replace");
      if (weighted) args.push_back("--weighted");
      const ChildRun run = RunSample(args);
      ASSERT_EQ(run.exit_code, 0) << Describe(args, run);
      const nlohmann::json j = nlohmann::json::parse(run.out);
      Result<std::vector<SampledLayer>> expected =
          SampleMultiLayer(*graph, seeds, fanouts, SamplingOptions{replace, weighted, 18446744073709551615ULL, 1});
      FL_ASSERT_OK(expected);
      ASSERT_EQ(j.size(), 1u) << run.out;
      ASSERT_EQ(j.at("layers").size(), expected->size());
      for (size_t k = 0; k < expected->size(); ++k) {
        const nlohmann::json& layer = j["layers"][k];
        EXPECT_EQ(layer.size(), 4u);
        EXPECT_EQ(layer.at("seeds").get<std::vector<int64_t>>(), (*expected)[k].subgraph.seeds);
        EXPECT_EQ(layer.at("indptr").get<std::vector<int64_t>>(), (*expected)[k].subgraph.indptr);
        EXPECT_EQ(layer.at("indices").get<std::vector<int64_t>>(), (*expected)[k].subgraph.indices);
        EXPECT_EQ(layer.at("original_edge_ids").get<std::vector<int64_t>>(), (*expected)[k].subgraph.original_edge_ids);
      }
    }
  }
}

TEST_F(SampleMainTest, EveryRuntimeAndThreadCountPrintsTheSameJson) {
  const std::string seeds_file = TmpDir() + "/seeds.npy";
  FL_ASSERT_OK(npy::WriteNpyInt(seeds_file, {3, 1, 4, 1, 5, 9, 26}, npy::DType::kInt32));
  const std::vector<std::string> common = {"--graph",    *weighted_dir_, "--fanouts",  "5,3",
                                           "--rng-seed", "42",           "--weighted", "--json"};
  const std::vector<std::vector<std::string>> variants = {
      {"--seeds", "3,1,4,1,5,9,26", "--runtime", "cpu", "--threads", "1"},
      {"--seeds", "3,1,4,1,5,9,26", "--runtime", "cpu", "--threads", "2"},
      {"--seeds-file", seeds_file, "--threads", "3"},
      {"--seeds", "3,1,4,1,5,9,26", "--runtime", "simcuda"},
      {"--seeds", "3,1,4,1,5,9,26", "--runtime", "simcuda", "--placement", "pinned"},
  };
  std::string baseline;
  for (const std::vector<std::string>& variant : variants) {
    std::vector<std::string> args = common;
    args.insert(args.end(), variant.begin(), variant.end());
    const ChildRun run = RunSample(args);
    ASSERT_EQ(run.exit_code, 0) << Describe(args, run);
    if (baseline.empty()) {
      baseline = run.out;
      EXPECT_EQ(nlohmann::json::parse(run.out)["layers"].size(), 2u);
    } else {
      EXPECT_EQ(run.out, baseline) << Describe(args, run);
    }
  }
}

TEST_F(SampleMainTest, HumanOutputSummarizesEveryLayer) {
  const std::vector<std::string> args = {"--graph", *unweighted_dir_, "--seeds", "1,2",      "--fanouts",
                                         "3,2",     "--rng-seed",     "5",       "--verbose"};
  const ChildRun run = RunSample(args);
  ASSERT_EQ(run.exit_code, 0) << Describe(args, run);
  EXPECT_THAT(run.out, testing::HasSubstr("layer 0 (fanout 3): 2 seeds")) << run.out;
  EXPECT_THAT(run.out, testing::HasSubstr("layer 1 (fanout 2)")) << run.out;
  EXPECT_NE(run.out.find("original_edge_ids: ["), std::string::npos) << run.out;
  // --verbose: a line before and after each layer on stderr.
  EXPECT_NE(run.err.find("sample: layer 0: sampling 2 seeds with fanout 3 on cpu"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("sample: layer 1: "), std::string::npos) << run.err;
}

TEST_F(SampleMainTest, BadInputExitsTwoWithAOneLineMessage) {
  const std::string truncated = TmpDir() + "/truncated.npy";
  FL_ASSERT_OK(npy::WriteNpyInt(truncated, {1, 2, 3, 4}, npy::DType::kInt64));
  struct stat st;
  ASSERT_EQ(::stat(truncated.c_str(), &st), 0);
  ASSERT_EQ(::truncate(truncated.c_str(), st.st_size - 5), 0);
  const std::string floats = TmpDir() + "/floats.npy";
  FL_ASSERT_OK(npy::WriteNpyFloat32(floats, {1.0f, 2.0f}));
  const std::string& g = *weighted_dir_;
  struct BadCase {
    std::vector<std::string> args;
    std::vector<std::string> expected;  // substrings of the message
  };
  const std::vector<BadCase> cases = {
      {{"--graph", g, "--seeds", "1,50", "--fanouts", "2", "--rng-seed", "1"},
       {"--seeds: seed 50 at position 1 is out of range", "[0, 50)"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "3,-2", "--rng-seed", "1"},
       {"--fanouts: fanout -2 at position 1 is invalid", "expected -1"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "3,x", "--rng-seed", "1"}, {"--fanouts", "'x'", "not an integer"}},
      {{"--seeds", "1", "--fanouts", "2", "--rng-seed", "1"}, {"--graph is required"}},
      {{"--graph", g + "/missing", "--seeds", "1", "--fanouts", "2", "--rng-seed", "1"},
       {"--graph", "missing", "no such directory"}},
      {{"--graph", g + "/indptr.npy", "--seeds", "1", "--fanouts", "2", "--rng-seed", "1"},
       {"--graph", "indptr.npy': not a directory; expected a directory with indptr.npy and indices.npy"}},
      {{"--graph", g, "--seeds-file", truncated, "--fanouts", "2", "--rng-seed", "1"},
       {"--seeds-file", "truncated.npy", "is truncated"}},
      {{"--graph", g, "--seeds-file", floats, "--fanouts", "2", "--rng-seed", "1"},
       {"--seeds-file", "dtype '<f4'", "expected"}},
      {{"--graph", g, "--seeds", "1", "--seeds-file", truncated, "--fanouts", "2", "--rng-seed", "1"},
       {"--seeds and --seeds-file", "exactly one"}},
      {{"--graph", g, "--fanouts", "2", "--rng-seed", "1"}, {"one of --seeds or --seeds-file is required"}},
      {{"--graph", *unweighted_dir_, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--weighted"},
       {"--weighted", "no edge weights"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "-3"}, {"--rng-seed '-3' is invalid"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2"}, {"--rng-seed is required"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--threads", "0"},
       {"--threads '0' is invalid", "expected an integer in 1..1024"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--runtime", "tpu"}, {"--runtime", "tpu"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--placement", "host"},
       {"--placement 'host' is invalid"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--runtime", "simcuda", "--threads", "2"},
       {"--threads applies to runtime cpu only; this is runtime simcuda"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--placement", "pinned"},
       {"--placement applies to a device runtime (simcuda, cuda or auto) only; this is runtime cpu"}},
      {{"--graph", g, "--seeds", "1", "--fanouts", "2", "--rng-seed", "1", "--bogus"}, {"--bogus"}},
  };
  for (const BadCase& c : cases) {
    const ChildRun run = RunSample(c.args);
    EXPECT_EQ(run.exit_code, 2) << Describe(c.args, run);
    EXPECT_EQ(run.out, "") << Describe(c.args, run);
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << Describe(c.args, run);
    EXPECT_EQ(run.err.rfind("sample: ", 0), 0u) << Describe(c.args, run);
    for (const std::string& part : c.expected) {
      EXPECT_THAT(run.err, testing::HasSubstr(part)) << "missing '" << part << "'\n" << Describe(c.args, run);
    }
  }
}

// CUDA_VISIBLE_DEVICES= (empty) hides every GPU, so this runs on GPU machines too.
TEST_F(SampleMainTest, CudaWithoutADeviceIsARuntimeFailure) {
  const std::vector<std::string> args = {"--graph", *weighted_dir_, "--seeds", "1",         "--fanouts",
                                         "2",       "--rng-seed",   "1",       "--runtime", "cuda"};
  const ChildRun run = RunSample(args, {"CUDA_VISIBLE_DEVICES="});
  EXPECT_EQ(run.exit_code, 1) << Describe(args, run);
  EXPECT_THAT(run.err, testing::HasSubstr("sample: sampling failed on runtime cuda")) << Describe(args, run);
}

TEST_F(SampleMainTest, HelpDocumentsEveryFlagAndTheJsonFormat) {
  const ChildRun run = RunSample({"--help"});
  ASSERT_EQ(run.exit_code, 0) << Describe({"--help"}, run);
  for (const char* part :
       {"--graph", "--seeds", "--seeds-file", "--fanouts", "--replace", "--weighted", "--rng-seed", "--runtime",
        "--threads", "--placement", "--json", "--verbose", "\"layers\"", "original_edge_ids", "Exit codes"}) {
    EXPECT_THAT(run.out, testing::HasSubstr(part)) << "help lacks " << part << "\n" << run.out;
  }
}

}  // namespace
}  // namespace faultline
