// Keeps the "threaded" test tag true. The TSan stage of ci/test.sh runs only
// tests tagged "threaded" (TSan reports races between threads; a process
// that never starts one gives it nothing to find), so a test that starts a
// thread without the tag would silently lose its race checking. In the
// plain build every test binary's main (test_main.cc) counts the threads its
// processes start, forked and spawned children included, and fails such a
// test with a message that says what to change.
//
// How: this library defines pthread_create, which the executable exports
// and so wins over libc's for std::thread too; it notes the first thread of
// each untagged process in a file under $TEST_TMPDIR (children share it)
// and calls libc's. Not under ASan or TSan: their runtimes intercept
// pthread_create themselves (and TSan runs only tagged tests anyway).
#ifndef FAULTLINE_REFERENCE_PROCESS_THREAD_CENSUS_H_
#define FAULTLINE_REFERENCE_PROCESS_THREAD_CENSUS_H_

#include <string>

namespace faultline {

// "" when the test is tagged threaded (FAULTLINE_TEST_THREADED=1), has the
// census off (FAULTLINE_THREAD_CENSUS=off: the gpu tests, whose CUDA driver
// starts threads), runs outside Bazel (no TEST_TMPDIR), was built with a
// sanitizer, or none of its processes started a thread; otherwise the error
// to print, naming the first process that did.
std::string UntaggedThreadsError();

// Registers the check for this process (test_main.cc, and the fuzz smoke
// tests, whose main is the standalone driver's): when it exits, prints
// UntaggedThreadsError() and exits 1 if it is not empty. Forked children
// that exit do not check.
void CheckThreadCensusAtExit();

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_PROCESS_THREAD_CENSUS_H_
