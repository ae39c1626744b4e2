#!/usr/bin/env bash
# A SIGTERM (what `timeout` sends) while dist_bench's MPI job runs ends the
# job and removes its folders before dist_bench ends by that signal. Found
# by a new user's trial: Open MPI's session folder (under TMPDIR) and its
# shared-memory folder (in /dev/shm) were left behind.
set -uo pipefail
BENCH="$1"
source "$(dirname "$0")/check_lib.sh"
export TMPDIR="$WORK/tmp"  # the job's session folder comes here, where no other test's does
mkdir -p "$TMPDIR"
shm_before=$(ls -d /dev/shm/fl-ompi-* 2>/dev/null | sort)
# Tiny rows, many batches: the in-process part takes seconds, the MPI job minutes (it is stopped long before).
"$BENCH" --ranks 2 --rows 64 --dim 8 --batch 16 --iterations 1000000 >/dev/null 2>"$WORK/stderr" &
bench=$!
# Wait (bounded) until the job's session folder exists: the job runs.
for _ in $(seq 600); do
  compgen -G "$TMPDIR/fl-ompi-*" >/dev/null && break
  kill -0 "$bench" 2>/dev/null || break
  sleep 0.1
done
check "the MPI job started" yes "$(compgen -G "$TMPDIR/fl-ompi-*" >/dev/null && echo yes || echo no)"
kill -TERM "$bench"
wait "$bench"
check "exit status: ended by SIGTERM" 143 "$?"
check "the session folder is removed" "" "$(ls "$TMPDIR")"
# The test is exclusive: no other test's folder comes or goes in /dev/shm meanwhile.
check "no shared-memory folder is left" "$shm_before" "$(ls -d /dev/shm/fl-ompi-* 2>/dev/null | sort)"
check "it says why it stopped" yes \
  "$(grep -q 'dist_bench: stopped by signal 15; the MPI job was ended and its folders removed' "$WORK/stderr" && echo yes || echo no)"
finish dist_bench_signal_test
