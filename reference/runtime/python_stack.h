// Provides CurrentPythonStack: the calling thread's Python frames, when the
// process runs Python, read through CPython's own traceback dump.
#ifndef FAULTLINE_REFERENCE_RUNTIME_PYTHON_STACK_H_
#define FAULTLINE_REFERENCE_RUNTIME_PYTHON_STACK_H_

#include <string>

namespace faultline {

// Returns the calling thread's Python stack, most recent call first, one
// `File "script.py", line 3 in main` line per frame, as faulthandler prints
// it; "" when the process runs no Python or this thread has no Python
// state. Needs no Python headers: CPython's exported _Py_DumpTraceback (the
// function faulthandler calls) writes the frames into a memory file.
std::string CurrentPythonStack();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_PYTHON_STACK_H_
