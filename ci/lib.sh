# Shared helpers for the ci/ scripts (sourced, not run).

# stage_json <name> <passed> <failed> <not_run or ""> <seconds> <rc> <log or "">:
# one stage's JSON object, for print_json.
stage_json() {
  jq -cn --arg stage "$1" --argjson passed "$2" --argjson failed "$3" --arg not_run "$4" \
    --argjson seconds "$5" --argjson rc "$6" --arg log "$7" \
    '{stage: $stage, passed: $passed, failed: $failed}
     + (if $not_run == "" then {} else {not_run: ($not_run | tonumber)} end)
     + {seconds: $seconds, ok: ($rc == 0), log: (if $log == "" then null else $log end)}'
}

# Runs one `bazel test` stage and adds its pass/fail counts to the totals
# printed by print_totals. A red stage's log is kept (its path is printed);
# a green one's is removed, so that runs leave nothing behind in /tmp.
TOTAL_PASSED=0
TOTAL_FAILED=0
STAGES_JSON=()  # one JSON object per stage run, for print_json
run_stage() {
  local name="$1"; shift
  local log
  log="$(mktemp -t "faultline-${name}.XXXX.log")"
  echo "=== ${name}: bazel test $*"
  local start=$SECONDS rc=0
  # Bazel's status is read inside the `||`: after `|| true` PIPESTATUS would
  # be true's (with pipefail a failed bazel fails the pipeline), and a red
  # stage would read as exit 0.
  bazel test --config=ci "$@" 2>&1 | tee "$log" | grep -E --line-buffered \
    '^(//|Executed|FAIL|ERROR|INFO: Build completed)|PASSED|FAILED|TIMEOUT|NO STATUS' || rc=${PIPESTATUS[0]}
  local passed failed
  passed=$(grep -cE '^//.* (PASSED|\(cached\) PASSED)' "$log" || true)
  failed=$(grep -cE '^//.* (FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD)' "$log" || true)
  TOTAL_PASSED=$((TOTAL_PASSED + passed))
  TOTAL_FAILED=$((TOTAL_FAILED + failed))
  local seconds=$((SECONDS - start))
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); fi
  if [ "$rc" -eq 0 ] && [ "$failed" -ne 0 ]; then rc=1; fi  # a failed test fails the stage, whatever bazel said
  local kept_log=""
  if [ "$rc" -eq 0 ]; then
    rm -f "$log"
    echo "=== ${name}: ${passed} passed, ${failed} failed in ${seconds}s (exit ${rc})"
  else
    echo "=== ${name}: ${passed} passed, ${failed} failed in ${seconds}s (exit ${rc}); log: ${log}"
    kept_log=$log
  fi
  STAGES_JSON+=("$(stage_json "$name" "$passed" "$failed" "" "$seconds" "$rc" "$kept_log")")
  return "$rc"
}

# Runs a stage that is a script of its own (ci/dropin_tier.sh): its --json
# summary gives the counts; its exit 3 means it could not run (no package
# index), which is reported, counted in TOTAL_NOT_RUN and never a pass.
TOTAL_NOT_RUN=0
run_script_stage() {
  local name="$1"; shift
  local log summary
  log="$(mktemp -t "faultline-${name}.XXXX.log")"
  summary="$(mktemp -t "faultline-${name}.XXXX.json")"
  echo "=== ${name}: $*"
  local start=$SECONDS rc=0
  "$@" --json >"$summary" 2> >(tee "$log" >&2) || rc=$?
  local passed failed not_run
  read -r passed failed not_run < <(python3 -c 'import json,sys
try:
    s = json.load(open(sys.argv[1]))
    print(s["passed"], s["failed"], len(s["not_run"]))
except Exception:
    print(0, 1, 0)' "$summary")
  TOTAL_PASSED=$((TOTAL_PASSED + passed))
  TOTAL_FAILED=$((TOTAL_FAILED + failed))
  TOTAL_NOT_RUN=$((TOTAL_NOT_RUN + not_run))
  local seconds=$((SECONDS - start))
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] && [ "$failed" -eq 0 ]; then TOTAL_FAILED=$((TOTAL_FAILED + 1)); fi
  local kept_log=""
  if [ "$rc" -eq 0 ]; then
    rm -f "$log"
  else
    kept_log=$log
  fi
  echo "=== ${name}: ${passed} passed, ${failed} failed, ${not_run} not run in ${seconds}s (exit ${rc})$([ "$rc" -eq 0 ] || echo "; log: $log")"
  STAGES_JSON+=("$(stage_json "$name" "$passed" "$failed" "$not_run" "$seconds" "$rc" "$kept_log")")
  rm -f "$summary"
  return "$rc"
}

print_totals() {
  local not_run=""
  [ "${TOTAL_NOT_RUN:-0}" -eq 0 ] || not_run=", ${TOTAL_NOT_RUN} not run"
  echo "${TOTAL_PASSED} passed, ${TOTAL_FAILED} failed${not_run}"
}

# Prints the stages and totals as one JSON object (ci/test.sh --json).
print_json() {
  printf '%s\n' "${STAGES_JSON[@]}" |
    jq -cs --argjson passed "$TOTAL_PASSED" --argjson failed "$TOTAL_FAILED" --argjson not_run "${TOTAL_NOT_RUN:-0}" \
      '{stages: ., passed: $passed, failed: $failed, not_run: $not_run, ok: ($failed == 0 and $not_run == 0)}'
}
