// Provides the child work that F4, F5 and F6 share: a child process gathers
// feature rows with a device kernel (after LazyInitCuda, so a poisoned fork
// fails the way PyTorch's does) and reports them as JSON; the parent waits for
// it, turns its error into the observed signature, or compares its rows with
// the host gather (the single-process baseline).
#ifndef FAULTLINE_REPRO_GATHER_CHILD_H_
#define FAULTLINE_REPRO_GATHER_CHILD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"
#include "reference/runtime/runtime.h"
#include "repro/registry.h"
#include "repro/scenario_support.h"

namespace faultline {
namespace repro {

// The rows a child gathers: table[r][c] = (r * cols + c) * scale, and ids.
struct GatherCase {
  int64_t rows;
  int64_t cols;
  float scale;
  std::vector<int64_t> ids;
};

// What a gather child forked after its parent initialized CUDA shows when
// it lazily initializes CUDA itself (step lazy_init): PyTorch's
// RuntimeError, raised before any CUDA call, so without a CUDA error code
// (torch 2.11 on an H100, docs/gpu-validation.md), then the driver's own
// answer in parentheses: real CUDA closes them, simcuda goes on with where
// the parent initialized CUDA.
inline Signature LazyInitRefusedInForkedWorker(RuntimeKind runtime) {
  return {"failed_precondition", 0,
          Pattern(ClosedOrForkNote(
              runtime, Quote(std::string(kCannotReinitializeCuda) + " (cuInit failed: initialization error"))),
          ProcessWithPid(R"(worker \d+)"), "lazy_init"};
}

// Returns the host gather: the single-process baseline, no CUDA involved.
Result<std::vector<float>> GatherOnHost(const GatherCase& gather);

// Lazily initializes `kind`, selects `device` and gathers there; *step names
// the step that failed (lazy_init, set_device, index_select).
Result<std::vector<float>> GatherOnDevice(RuntimeKind kind, const GatherCase& gather, int device, std::string* step);

// Sends the child's result to the parent ({"ok", "rows"} or {"ok", "step",
// "status"}) and returns the child's exit code.
int ReportGather(const Result<std::vector<float>>& rows, const std::string& step);

// Waits for `child` (called `process` in the transcript) and reads its report.
// Returns an outcome when the scenario ends here: the child's error (checked
// against the expected signature, or unexpected under ExpectPass), a broken
// report, rows that differ from `baseline`, or a success where a signature
// was expected. Returns nullopt when the child gathered the baseline's rows
// and the run must pass; *transcript gains a line either way.
std::optional<Outcome> CollectGather(ChildProcess& child, const std::string& process, RuntimeKind kind,
                                     const Expected& expected, const std::vector<float>& baseline,
                                     std::string* transcript);

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_GATHER_CHILD_H_
