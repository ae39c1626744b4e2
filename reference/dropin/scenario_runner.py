"""The runner the drop-in scenario files share (torch_scenarios.py,
numba_scenarios.py): each scenario runs in a fresh process under
ci/simcuda.sh --report, prints what it observed as one `RESULT {json}` line,
and the runner compares that, the process report and stderr with the
result real CUDA gives.

A scenario file holds its scenario functions and a table
    SCENARIOS = {name: (function, simcuda.sh options, extra environment, expected RESULT, checks)}
and ends with `sys.exit(scenario_runner.main(__doc__, SCENARIOS, __file__))`.
checks (all optional): "initialized" (bool: the report says the scenario's
process initialized CUDA, or not), "stderr" (a text stderr must hold),
"forked_child_fails" (a forked child's first failing call has code 3),
"where" ((function, line offset): stderr names that line of the scenario
file as where CUDA was initialized), "timeout" (seconds).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def result(**observed):
    print("RESULT " + json.dumps(observed), flush=True)


def error_text(e):
    """What was raised: its class and the first line of its message."""
    lines = str(e).splitlines()
    return f"{type(e).__module__}.{type(e).__qualname__}: {lines[0] if lines else ''}"


def run_scenario(script, name, spec, python, launcher, timeout, env_defaults):
    fn, options, env_extra, expected, checks = spec
    timeout = min(timeout, checks.get("timeout", timeout))
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, **env_extra)
        for key, value in env_defaults.items():
            env.setdefault(key, value)
        started = time.monotonic()
        # Its own session, so that a hang is ended with every process it started.
        proc = subprocess.Popen([launcher, *options, "--report", report, "--", python, script, "--scenario", name],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
        seconds = time.monotonic() - started
        processes = []
        if os.path.exists(report):
            with open(report) as f:
                processes = json.load(f)["processes"]
    problems = []
    lines = [l for l in stdout.splitlines() if l.startswith("RESULT ")]
    observed = json.loads(lines[-1][len("RESULT "):]) if lines else None
    if timed_out:
        problems.append(f"timed out after {timeout:g}s; stderr: {stderr[-2000:]}")
    elif observed is not None and set(observed) == {"raised"}:
        problems.append(f"raised {observed['raised']}")
    elif proc.returncode != 0 or observed is None:
        problems.append(f"exit {proc.returncode}, no RESULT line; stderr: {stderr[-2000:]}")
    elif observed != expected:
        problems.append(f"observed {observed}, expected {expected}")
    main_process = [p for p in processes if p["start"] == "exec" and "--scenario" in p["command"]]
    if "initialized" in checks:
        was = bool(main_process) and main_process[0]["initialized_where"] is not None
        if was != checks["initialized"]:
            problems.append(f"report: CUDA initialized is {was}, expected {checks['initialized']}")
    if "stderr" in checks and checks["stderr"] not in stderr:
        problems.append(f"stderr lacks {checks['stderr']!r}: {stderr[-2000:]}")
    if checks.get("forked_child_fails"):
        forked = [p for p in processes if p["start"] == "fork"]
        if not forked or not forked[0]["forked_after_initialization"] or \
                (forked[0]["first_failing_call"] or {}).get("code") != 3:
            problems.append(f"report: no forked child with a first failing call of code 3: {forked}")
    if "where" in checks:
        function, offset = checks["where"]
        want = f'File "{script}", line {function.__code__.co_firstlineno + offset} in {function.__name__}'
        if want not in stderr:
            problems.append(f"stderr lacks the initialization site {want!r}: {stderr[-2000:]}")
    return {"scenario": name, "ok": not problems, "seconds": round(seconds, 2), "observed": observed,
            "expected": expected, "problems": problems}


def main(doc, scenarios, script, env_defaults=None, python_help="a venv's python"):
    """The scenario file's command line: run one scenario (--scenario, in the
    simulated process) or drive them all. Returns the exit status."""
    script = os.path.abspath(script)
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    parser.add_argument("--python", help=python_help)
    parser.add_argument("--launcher", help="ci/simcuda.sh")
    parser.add_argument("--only", action="append", choices=sorted(scenarios), help="run only these scenarios")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per scenario (default 300)")
    args = parser.parse_args()
    if args.scenario:
        try:
            scenarios[args.scenario][0]()
        except Exception as e:  # noqa: BLE001: what the package raised is the observation
            import traceback
            traceback.print_exc()
            result(raised=error_text(e))
            return 1
        return 0
    if not args.python or not args.launcher:
        parser.error("--python and --launcher are required")
    rows = []
    for name in args.only or scenarios:
        row = run_scenario(script, name, scenarios[name], args.python, args.launcher, args.timeout,
                           env_defaults or {})
        rows.append(row)
        print(f"{'ok  ' if row['ok'] else 'FAIL'} {name:22s} {row['seconds']:6.2f}s {row['observed']}",
              file=sys.stderr, flush=True)
        for p in row["problems"]:
            print(f"     {p}", file=sys.stderr)
    ok = all(r["ok"] for r in rows)
    if args.json:
        print(json.dumps({"ok": ok, "scenarios": rows}, indent=2))
    return 0 if ok else 1
