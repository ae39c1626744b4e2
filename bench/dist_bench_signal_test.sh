#!/usr/bin/env bash
# A SIGTERM (what `timeout` sends) while dist_bench's MPI job runs ends the
# job and removes its folders before dist_bench ends by that signal. Found
# by a new user's trial: Open MPI's session folder (under TMPDIR) and its
# shared-memory folder (in /dev/shm) were left behind.
set -uo pipefail
BENCH="$1"
source "$(dirname "$0")/check_lib.sh"
# The session folder comes here, where no other test's does. A short path:
# PMIx's socket paths under it must fit in 108 bytes (TEST_TMPDIR is too long).
export TMPDIR="$(mktemp -d /tmp/fl-sig.XXXXXX)"
trap 'rm -rf "$WORK" "$TMPDIR"' EXIT
reports="${TEST_TMPDIR:-/tmp}"  # where the launcher makes the job's report folder (DefaultTempBase)
shm_before=$(ls -d /dev/shm/fl-ompi-* 2>/dev/null | sort)
# Tiny rows, many batches: the in-process part takes about 1 s (30 s under
# ASan), the MPI job's batches about 5 s more, and it is stopped as soon as
# both ranks have joined, before those batches.
"$BENCH" --ranks 2 --rows 64 --dim 8 --batch 16 --iterations 300000 >/dev/null 2>"$WORK/stderr" &
bench=$!
# Wait (bounded: 240 s, for sanitizers on busy cores) until both ranks have
# joined: the MPI job runs.
joined() { compgen -G "$reports/faultline-mpi-*/rank-0.mark-joined" >/dev/null &&
           compgen -G "$reports/faultline-mpi-*/rank-1.mark-joined" >/dev/null; }
for _ in $(seq 2400); do
  joined && break
  kill -0 "$bench" 2>/dev/null || break
  sleep 0.1
done
check "both ranks joined" yes "$(joined && echo yes || echo no)"
kill -TERM "$bench"
wait "$bench"
check "exit status: ended by SIGTERM" 143 "$?"
check "it says why it stopped" yes \
  "$(grep -q 'dist_bench: stopped by signal 15; the MPI job was ended and its folders removed' "$WORK/stderr" && echo yes || echo no)"
check "the session folder is removed" "" "$(ls "$TMPDIR")"
check "the report folder is removed" "" "$(ls -d "$reports"/faultline-mpi-* 2>/dev/null)"
# The test is exclusive: no other test's folder comes or goes in /dev/shm meanwhile.
check "no shared-memory folder is left" "$shm_before" "$(ls -d /dev/shm/fl-ompi-* 2>/dev/null | sort)"
finish dist_bench_signal_test
