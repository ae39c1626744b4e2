#!/usr/bin/env bash
# Unmodified programs under ci/simcuda.sh: a CUDA program built with
# nvcc -cudart shared (fat binary, <<<>>> launch, fork) and a C program
# against the driver API; the launcher's exit status, report and usage.
set -uo pipefail
launcher=ci/simcuda.sh
export FAULTLINE_SIMCUDA_LIB_DIR="$PWD/reference/dropin"
status=0
fail() { echo "FAIL: $*"; status=1; }
expect_line() {  # expect_line <output> <line>
  grep -qxF -- "$2" <<<"$1" || fail "missing line '$2' in:"$'\n'"$1"
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The nvcc-built program: the kernel is refused, the process keeps working,
# the forked child fails with 3 and says where the parent initialized CUDA.
out=$("$launcher" --report "$work/user.json" -- reference/dropin/user_program_bin/user_program 2>"$work/user.err")
rc=$?
[ "$rc" -eq 7 ] || fail "user_program: the launcher exited $rc, expected the program's 7"
expect_line "$out" "count 0 1"
expect_line "$out" "launch 209 no kernel image is available for execution on the device"
expect_line "$out" "copy back 0"
expect_line "$out" "bytes unchanged"
expect_line "$out" "child malloc 3"
grep -qF "cannot launch kernel 'Scale(float*, float)': simcuda runs no device code" "$work/user.err" ||
  fail "stderr does not name the refused kernel: $(cat "$work/user.err")"
grep -qE "was forked after CUDA was initialized in pid [0-9]+ at:" "$work/user.err" ||
  fail "stderr does not say where CUDA was initialized: $(cat "$work/user.err")"
python3 - "$work/user.json" <<'PY' || fail "user_program's report is not as expected: $(cat "$work/user.json")"
import json, sys
processes = json.load(open(sys.argv[1]))["processes"]
parent = [p for p in processes if p["start"] == "exec" and p["command"].endswith("user_program")]
child = [p for p in processes if p["start"] == "fork"]
assert len(parent) == 1 and len(child) == 1, processes
assert parent[0]["initialized_where"], parent
assert parent[0]["first_failing_call"] == {"call": "cudaLaunchKernel", "code": 209,
                                           "name": "cudaErrorNoKernelImageForDevice"}, parent
assert child[0]["parent"] == parent[0]["pid"] and child[0]["forked_after_initialization"], child
assert child[0]["first_failing_call"]["code"] == 3 and child[0]["initialized_where"] is None, child
PY

# The driver API from C, on the second of two devices.
out=$("$launcher" --devices 2 -- reference/dropin/driver_program 2>"$work/driver.err")
rc=$?
[ "$rc" -eq 0 ] || fail "driver_program exited $rc: $(cat "$work/driver.err")"
for line in "count before init 3" "init 0" "count 0 2" "get 0" "name 0 simcuda GPU" "alloc without context 201" \
  "retain 0" "set current 0" "alloc 0" "htod 0" "dtoh 0 1 2 3 4" "free 0"; do
  expect_line "$out" "$line"
done

# A driver call before cuInit says so once; a child forked later still says
# where its parent initialized CUDA (each message has its own once-flag).
cat >"$work/flags.py" <<'PY'
import ctypes, os
driver, runtime = ctypes.CDLL("libcuda.so.1"), ctypes.CDLL("libcudart.so.13")
device, count = ctypes.c_int(), ctypes.c_int()
driver.cuDeviceGet(ctypes.byref(device), 0)
runtime.cudaGetDeviceCount(ctypes.byref(count))
pid = os.fork()
if pid == 0:
    os._exit(runtime.cudaGetDevice(ctypes.byref(device)))
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
PY
out=$("$launcher" -- python3 "$work/flags.py" 2>"$work/flags.err")
expect_line "$out" "child 3"
grep -q "cuDeviceGet failed: initialization error; cuInit has not been called" "$work/flags.err" ||
  fail "no 'cuInit has not been called' line: $(cat "$work/flags.err")"
grep -q "was forked after CUDA was initialized in pid" "$work/flags.err" ||
  fail "after a call before cuInit, the forked child no longer says where CUDA was initialized: $(cat "$work/flags.err")"

# A program killed by a signal: 128 + the signal, as a shell reports it.
"$launcher" -- sh -c 'kill -TERM $$'
rc=$?
[ "$rc" -eq 143 ] || fail "a command killed by SIGTERM: the launcher exited $rc, expected 143"

# Usage: --help, and bad usage exits 2 naming the problem, running nothing.
"$launcher" --help | grep -q "Usage: ci/simcuda.sh" || fail "--help does not print the usage"
for args in "--devices" "--devices 65 -- true" "--devices x -- true" "--frobnicate -- true" "--" \
  "--report /nonexistent/dir/r.json -- true" "--report $work -- true"; do
  # shellcheck disable=SC2086
  err=$("$launcher" $args 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || fail "'ci/simcuda.sh $args' exited $rc, expected 2"
  grep -q "^ci/simcuda.sh: " <<<"$err" || fail "'ci/simcuda.sh $args' said no reason: $err"
done

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
