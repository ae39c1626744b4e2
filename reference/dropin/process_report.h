// Provides the drop-in's per-process report: when
// FAULTLINE_SIMCUDA_REPORT_DIR is set, every process that loads the stand-in
// driver and initializes CUDA, makes a failing CUDA call or was forked after
// CUDA was initialized keeps REPORT_DIR/<pid>.json up to date (pid, parent,
// how it started, whether it was forked after CUDA was initialized, where it
// initialized CUDA, its first failing call). ci/simcuda.sh --report merges
// the files.
#ifndef FAULTLINE_REFERENCE_DROPIN_PROCESS_REPORT_H_
#define FAULTLINE_REFERENCE_DROPIN_PROCESS_REPORT_H_

#include <string>

namespace faultline::dropin {

// Records this process as started by exec (the library's load) and arms the
// fork handler. Call once, before the simcuda model registers its own fork
// handlers (the report's lock then orders after the model's).
void StartProcessReport();
// Records where this process initialized CUDA (the model's observer).
void ReportInitialized(const std::string& site);
// Records the process's first failing CUDA call; later ones are not kept.
void ReportFailure(const char* api, int code, const char* name);

}  // namespace faultline::dropin

#endif  // FAULTLINE_REFERENCE_DROPIN_PROCESS_REPORT_H_
