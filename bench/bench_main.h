// Provides RunBenchmarksMain: BENCHMARK_MAIN with an exit status a script
// can trust (Google Benchmark exits 0 even when every benchmark failed).
#ifndef FAULTLINE_BENCH_BENCH_MAIN_H_
#define FAULTLINE_BENCH_BENCH_MAIN_H_

namespace faultline {

// Runs the benchmarks that --benchmark_filter selects, reporting as
// BENCHMARK_MAIN does. Returns 0 when every one that ran measured, 1 when
// one reported an error (state.SkipWithError; it is named on stderr), 2 for
// an unknown argument or a filter that matches no benchmark.
int RunBenchmarksMain(int argc, char** argv, const char* program);

}  // namespace faultline

#endif  // FAULTLINE_BENCH_BENCH_MAIN_H_
