// Implements RunBenchmarksMain (bench_main.h).
#include "bench/bench_main.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

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

}  // namespace

int RunBenchmarksMain(int argc, char** argv, const char* program) {
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
