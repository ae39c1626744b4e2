// Implements RunBenchmarksMain (bench_main.h).
#include "bench/bench_main.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/parse_int.h"

namespace faultline {
namespace {

// Passes everything to the reporter the flags ask for and keeps the names
// of the runs that reported an error.
class ErrorCountingReporter : public benchmark::BenchmarkReporter {
 public:
  // The library keeps the display reporter it makes (a function-local static).
  ErrorCountingReporter() : display_(benchmark::CreateDefaultDisplayReporter()) {}
  bool ReportContext(const Context& context) override { return display_->ReportContext(context); }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) failed_.push_back(run.benchmark_name() + ": " + run.error_message);
    }
    display_->ReportRuns(runs);
  }
  void Finalize() override { display_->Finalize(); }
  const std::vector<std::string>& failed() const { return failed_; }

 private:
  benchmark::BenchmarkReporter* display_;
  std::vector<std::string> failed_;
};

// The flag values Google Benchmark (1.8) handles badly, checked first: an
// unknown --benchmark_format or --benchmark_out_format prints its usage and
// exits 0, and a negative --benchmark_repetitions aborts in vector::reserve.
// Returns the usage error, or "" when they are fine.
std::string BadLibraryFlag(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t equals = arg.find('=');
    const std::string flag = arg.substr(0, equals), value = equals == std::string::npos ? "" : arg.substr(equals + 1);
    if (flag == "--benchmark_format" || flag == "--benchmark_out_format") {
      if (value != "console" && value != "json" && value != "csv") {
        return flag + " is '" + value + "'; expected console, json or csv";
      }
    } else if (flag == "--benchmark_repetitions") {
      const std::optional<int> repetitions = ParseWhole<int>(value);
      if (!repetitions || *repetitions < 1) return flag + " is '" + value + "'; expected a number of repetitions >= 1";
    }
  }
  return "";
}

}  // namespace

int RunBenchmarksMain(int argc, char** argv, const char* program) {
  if (const std::string bad = BadLibraryFlag(argc, argv); !bad.empty()) {
    std::fprintf(stderr, "%s: %s\n", program, bad.c_str());
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  ErrorCountingReporter reporter;
  const size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (ran == 0) {
    std::fprintf(stderr, "%s: no benchmark matches --benchmark_filter (--benchmark_list_tests lists them)\n", program);
    return 2;
  }
  for (const std::string& failure : reporter.failed()) std::fprintf(stderr, "%s: %s\n", program, failure.c_str());
  if (!reporter.failed().empty()) {
    std::fprintf(stderr, "%s: %zu of the benchmarks that ran reported an error; their numbers are not results\n",
                 program, reporter.failed().size());
    return 1;
  }
  return 0;
}

}  // namespace faultline
