#!/usr/bin/env bash
# The long fuzz run (docs/reliability.md "Fuzzing"): builds every
# target of //properties/fuzz with clang and libFuzzer (ASan + UBSan) and
# runs each one, one after the other, for N executions on a copy of its
# seed corpus. Installs clang-14 and its runtimes when they are missing.
#
#   ci/fuzz.sh [--runs N] [--max-seconds S] [--max-len B] [--resume] [--targets a,b] [--json] [--work DIR]
#
# Exit 0 only when every target ran its N executions with no crash (a
# crash, leak, timeout, out-of-memory or sanitizer report); each crash input
# is kept in DIR/<target>/ and printed. --resume continues a campaign: the
# corpus of the earlier runs in DIR is kept and N counts their executions
# too (a run that was killed counts up to its last status line). 1: a target failed; 2: bad usage,
# DIR in use by another run, or the setup or the build failed.
#
# Why its own output base: `--config=fuzz` switches CC to clang-14, which
# reconfigures Bazel's auto-detected C++ toolchain for the whole output
# base. In the shared one that would rebuild (and race) everyone's gcc
# builds, so this script gives the fuzz build an output base of its own
# (FAULTLINE_FUZZ_OUTPUT_BASE, default ~/.cache/faultline-fuzz/bazel), writes
# no bazel-* links into the checkout (--symlink_prefix=/), and lets that
# server exit by itself after 10 idle minutes.
set -uo pipefail
CALLER_DIR="$PWD"  # a relative --work is the caller's
cd "$(dirname "$0")/.."

# The fuzz targets are what Bazel says they are: every fl_fuzz_target of
# //properties/fuzz, found through its smoke test (tagged fuzz). Asked only
# once the arguments are checked, so --help and usage errors need no Bazel.
list_fuzz_targets() {
  bazel query --output=label 'attr(tags, "\bfuzz\b", tests(//properties/fuzz:all))' 2>/dev/null |
    sed -n 's|^//properties/fuzz:\(.*\)_smoke$|\1|p' | sort
}

usage() {
  cat <<EOF
usage: ci/fuzz.sh [--runs N] [--max-seconds S] [--max-len B] [--resume] [--targets a,b] [--json] [--work DIR]

Builds the libFuzzer targets of //properties/fuzz (clang-14,
-fsanitize=fuzzer,address,undefined) and runs each for N executions on a
copy of its seed corpus, one target at a time.

  --runs N         executions per target (default 10000000)
  --max-seconds S  stop a target after S seconds even if it has not run N
                   executions (libFuzzer's -max_total_time; default 0: no
                   limit); such a target counts as failed
  --max-len B      longest input libFuzzer makes, in bytes (libFuzzer's
                   -max_len; default 0: libFuzzer's own choice, up to 4096).
                   The command-line targets slow down about 4x once their
                   inputs reach 4 KB; 256 bytes holds every option they have
  --resume         continue the campaign in DIR instead of starting over:
                   keep each target's corpus and logs (DIR/<target>/fuzz*.log)
                   and run until the executions of all its runs together
                   reach N (a killed run counts to its last status line)
  --targets a,b    only these targets (default: every fl_fuzz_target of
                   //properties/fuzz, as bazel query lists them)
  --json           print one JSON row per target on stdout (target,
                   executions, seconds, exec_per_s, crashes, exit_status,
                   crash_inputs, runs, total_executions); progress goes to
                   stderr
  --work DIR       where the corpora, logs and crash inputs go
                   (default ~/.cache/faultline-fuzz/work)
  --help           this text

Exit 0 only when every target ran N executions with 0 crashes; 1 when one
did not; 2 for bad usage, a DIR another ci/fuzz.sh is using, or a failed
setup or build.
EOF
}

RUNS=10000000
MAX_SECONDS=0
MAX_LEN=0
RESUME=0
JSON=0
WORK="${HOME}/.cache/faultline-fuzz/work"
TARGETS=()
TARGETS_GIVEN=0
while (($#)); do
  case "$1" in  # an option at the end without its value: named, not just the usage
    --runs|--max-seconds|--max-len|--targets|--work)
      (($# >= 2)) || { echo "fuzz: $1 needs a value" >&2; usage >&2; exit 2; } ;;
  esac
  case "$1" in
    --runs) RUNS="${2:-}"; shift 2 || { usage >&2; exit 2; } ;;
    --runs=*) RUNS="${1#--runs=}"; shift ;;
    --max-seconds) MAX_SECONDS="${2:-}"; shift 2 || { usage >&2; exit 2; } ;;
    --max-seconds=*) MAX_SECONDS="${1#--max-seconds=}"; shift ;;
    --max-len) MAX_LEN="${2:-}"; shift 2 || { usage >&2; exit 2; } ;;
    --max-len=*) MAX_LEN="${1#--max-len=}"; shift ;;
    --targets) IFS=, read -r -a TARGETS <<<"${2:-}"; TARGETS_GIVEN=1; shift 2 || { usage >&2; exit 2; } ;;
    --targets=*) IFS=, read -r -a TARGETS <<<"${1#--targets=}"; shift ;;
    --json) JSON=1; shift ;;
    --resume) RESUME=1; shift ;;
    --work) WORK="${2:-}"; shift 2 || { usage >&2; exit 2; } ;;
    --work=*) WORK="${1#--work=}"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "fuzz: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
if ! [[ "$RUNS" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: --runs is '$RUNS'; expected a number of executions >= 1" >&2
  exit 2
fi
if ! [[ "$MAX_SECONDS" =~ ^[0-9]+$ ]]; then
  echo "fuzz: --max-seconds is '$MAX_SECONDS'; expected a number of seconds (0: no limit)" >&2
  exit 2
fi
if ! [[ "$MAX_LEN" =~ ^[0-9]+$ ]]; then
  echo "fuzz: --max-len is '$MAX_LEN'; expected a number of bytes (0: libFuzzer's default)" >&2
  exit 2
fi
if ((TARGETS_GIVEN && ${#TARGETS[@]} == 0)); then
  echo "fuzz: --targets is empty; expected some of the fuzz targets of //properties/fuzz" >&2
  exit 2
fi
if [ -z "$WORK" ]; then
  echo "fuzz: --work is empty; expected a folder for the corpora, logs and crash inputs" >&2
  exit 2
fi
[[ "$WORK" = /* ]] || WORK="$CALLER_DIR/$WORK"
mapfile -t ALL_TARGETS < <(list_fuzz_targets)
if ((${#ALL_TARGETS[@]} == 0)); then
  echo "fuzz: bazel query found no fuzz targets in //properties/fuzz (is bazel installed? ci/setup.sh)" >&2
  exit 2
fi
((TARGETS_GIVEN)) || TARGETS=("${ALL_TARGETS[@]}")
for t in "${TARGETS[@]}"; do
  if [[ " ${ALL_TARGETS[*]} " != *" $t "* ]]; then
    echo "fuzz: unknown target '$t'; expected some of ${ALL_TARGETS[*]}" >&2
    exit 2
  fi
done

# With --json, stdout carries only the JSON; everything else goes to stderr.
if ((JSON)); then exec 3>&1 1>&2; else exec 3>&1; fi

# One run per DIR: another would delete the corpora (rm -rf below) and
# overwrite the build log under this one. The lock is fd 9, held until this
# script and the fuzzer it runs have exited; the bazel commands get it closed
# (9>&-), or the Bazel server they start would hold it for its idle minutes.
mkdir -p "$WORK" || { echo "fuzz: cannot create --work $WORK" >&2; exit 2; }
exec 9>"$WORK/.lock" || { echo "fuzz: cannot open $WORK/.lock" >&2; exit 2; }
if ! flock -n 9; then
  echo "fuzz: another ci/fuzz.sh is using $WORK (it holds $WORK/.lock); wait for it or pass --work DIR" >&2
  exit 2
fi

# Bazel and the rest of the toolchain, as ci/repro.sh and ci/test.sh install them.
ci/setup.sh >&2 9>&- || { echo "fuzz: ci/setup.sh failed (see above)" >&2; exit 2; }

# clang-14 with libFuzzer and the sanitizer runtimes (Debian 12), and jq for
# the JSON rows.
missing=()
for pkg in clang-14 libclang-rt-14-dev jq; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "fuzz: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { echo "fuzz: could not install ${missing[*]}" >&2; exit 2; }
fi

OUTPUT_BASE="${FAULTLINE_FUZZ_OUTPUT_BASE:-${HOME}/.cache/faultline-fuzz/bazel}"
BAZEL=(bazel --output_base="$OUTPUT_BASE" --max_idle_secs=600)
LABELS=()
for t in "${TARGETS[@]}"; do LABELS+=("//properties/fuzz:$t"); done
echo "fuzz: building ${TARGETS[*]} with clang-14 and libFuzzer (output base $OUTPUT_BASE)"
# The build log is long (ld.gold warns about every ASan helper symbol): keep
# it in a file and show its end only when the build fails.
if ! "${BAZEL[@]}" build --config=ci --config=fuzz --symlink_prefix=/ "${LABELS[@]}" >"$WORK/build.log" 2>&1 9>&-; then
  grep -v "ld.gold: warning" "$WORK/build.log" | tail -40 >&2
  echo "fuzz: the build failed; log in $WORK/build.log" >&2
  exit 2
fi
if ! BIN="$("${BAZEL[@]}" info --config=ci --config=fuzz bazel-bin 2>"$WORK/info.log" 9>&-)" || [ -z "$BIN" ]; then
  cat "$WORK/info.log" >&2
  echo "fuzz: bazel info bazel-bin failed (output base $OUTPUT_BASE)" >&2
  exit 2
fi
for t in "${TARGETS[@]}"; do
  if [ ! -x "$BIN/properties/fuzz/$t" ]; then
    echo "fuzz: the build succeeded but $BIN/properties/fuzz/$t is missing" >&2
    exit 2
  fi
done

# The file-based targets write a few small files per input (and WriteNpy
# fsyncs): on tmpfs that costs microseconds instead of a disk flush.
scratch_base="${TMPDIR:-/tmp}"
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then scratch_base=/dev/shm; fi
# A TMPDIR of this run's own, removed on exit: the targets make their
# faultline-fuzz-XXXXXX scratch folder in it (properties/fuzz/fuzz_support.cc)
# and remove that only from atexit, which a crash, timeout or signal skips
# (libFuzzer ends those through abort or _exit). TEST_TMPDIR would come first
# there, so it is unset.
SCRATCH="$(mktemp -d "$scratch_base/faultline-fuzz-run.XXXXXX")" ||
  { echo "fuzz: cannot make a scratch folder in $scratch_base" >&2; exit 2; }
trap 'rm -rf "$SCRATCH"' EXIT
export TMPDIR="$SCRATCH"
unset TEST_TMPDIR
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Executions in one libFuzzer log: its final stats, or for a run that was
# killed, its last status line ("#N ...").
log_executions() {
  local n
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$1" | tail -1)
  [ -n "$n" ] || n=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "$1" | tail -1)
  echo "${n:-0}"
}

# A TERM or INT sent to this script alone also stops the fuzzer it runs.
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; exit 143' TERM
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; exit 130' INT
status=0
rows=()
for t in "${TARGETS[@]}"; do
  dir="$WORK/$t"
  if ((RESUME == 0)) || [ ! -d "$dir/corpus" ]; then
    rm -rf "$dir"
    mkdir -p "$dir/corpus"
    cp properties/fuzz/corpus/"$t"/* "$dir/corpus/"
  fi
  earlier=0
  mapfile -t earlier_logs < <(find "$dir" -maxdepth 1 -name 'fuzz*.log' | sort -V)
  for l in "${earlier_logs[@]}"; do earlier=$((earlier + $(log_executions "$l"))); done
  log="$dir/fuzz.log"
  ((${#earlier_logs[@]} == 0)) || log="$dir/fuzz.$((${#earlier_logs[@]} + 1)).log"
  this_runs=$((RUNS - earlier))
  if ((this_runs <= 0)); then
    echo "fuzz: $t: the campaign in $dir already has $earlier executions (>= $RUNS); nothing to run"
    this_runs=0
  fi
  cmd=("$BIN/properties/fuzz/$t" -runs="$this_runs" -max_total_time="$MAX_SECONDS" -timeout=30 -print_final_stats=1
       -artifact_prefix="$dir/")
  if ((MAX_LEN > 0)); then cmd+=(-max_len="$MAX_LEN"); fi
  cmd+=("$dir/corpus")
  echo "fuzz: $t: ${cmd[*]}"
  echo "fuzz: $t: full log in $log; progress (libFuzzer's pulse lines):"
  start=$(date +%s.%N)
  rc=0
  if ((this_runs > 0)); then
    # Progress: libFuzzer's pulse lines (at powers of two) and any report.
    "${cmd[@]}" >"$log" 2>&1 &
    pid=$!
    # In the background too: bash runs a trap only once a foreground command ends.
    tail -n +1 -F --pid="$pid" "$log" 2>/dev/null |
      grep --line-buffered -E 'pulse|DONE|INITED|ERROR|SUMMARY|Test unit written|deadly signal|fuzz check failed' |
      sed -u "s/^/  $t: /" &
    progress=$!
    wait "$pid"
    rc=$?
    pid=""
    wait "$progress"
  fi
  seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  execs=0
  [ -f "$log" ] && ((this_runs > 0)) && execs=$(log_executions "$log")
  total=$((earlier + execs))
  # A slow unit (libFuzzer: one input took over 10 s) is a finding only if
  # it is slow alone too: on a busy machine a fast input can stall. Each is
  # run again here, by itself, with a 10 s limit.
  for unit in "$dir"/slow-unit-*; do
    [ -e "$unit" ] || continue
    if timeout 60 "$BIN/properties/fuzz/$t" -timeout=10 "$unit" >"$unit.rerun.log" 2>&1; then
      echo "fuzz: $t: $unit was slow only under load (alone it passes within 10 s; $unit.rerun.log); renamed"
      mv "$unit" "${unit/slow-unit-/slow-under-load-}"
    fi
  done
  mapfile -t crashes < <(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
                                                          -o -name 'oom-*' -o -name 'slow-unit-*' \) \
                                                          ! -name '*.rerun.log' | sort)
  # A sanitizer or fuzz-check report without a saved input still counts, in
  # any run of the campaign.
  reports=${#crashes[@]}
  if ((reports == 0)) && cat "$dir"/fuzz*.log 2>/dev/null | grep -qE '^(==[0-9]+==ERROR|SUMMARY: |fuzz check failed)'; then
    reports=1
  fi
  rate=$(awk -v n="$execs" -v s="$seconds" 'BEGIN { printf "%d", (s > 0 ? n / s : 0) }')
  printf 'fuzz: %s: %s executions in %.0f s (%s exec/s), %d crashes, exit %d\n' "$t" "$execs" "$seconds" "$rate" \
    "$reports" "$rc"
  runs=$((${#earlier_logs[@]} + (this_runs > 0 ? 1 : 0)))
  if ((${#earlier_logs[@]} > 0)); then
    echo "fuzz: $t: campaign: $total executions in $runs runs ($earlier before this one)"
  fi
  for c in "${crashes[@]}"; do
    echo "fuzz: $t: crash input $c (reproduce: $BIN/properties/fuzz/$t $c):"
    head -c 512 "$c" | od -A d -c | head -20
  done
  if ((rc != 0 || reports > 0 || total < RUNS)); then status=1; fi
  rows+=("$(jq -cn --arg target "$t" --argjson executions "$execs" --argjson seconds "$(printf '%.1f' "$seconds")" \
    --argjson exec_per_s "$rate" --argjson crashes "$reports" --argjson exit_status "$rc" --argjson runs "$runs" \
    --argjson total_executions "$total" --args \
    '{target: $target, executions: $executions, seconds: $seconds, exec_per_s: $exec_per_s, crashes: $crashes,
      exit_status: $exit_status, crash_inputs: $ARGS.positional, runs: $runs, total_executions: $total_executions}' \
    "${crashes[@]}")")
done

if ((JSON)); then
  printf '%s\n' "${rows[@]}" | jq -s . >&3
else
  printf '%-18s %12s %9s %9s %8s %5s\n' target executions seconds exec/s crashes exit
  for row in "${rows[@]}"; do
    jq -r '[.target, .executions, .seconds, .exec_per_s, .crashes, .exit_status] | @tsv' <<<"$row" |
      awk -F'\t' '{ printf "%-18s %12d %9.0f %9d %8d %5d\n", $1, $2, $3, $4, $5, $6 }'
  done
fi
exit "$status"
