#!/usr/bin/env python3
"""Checks that the docs describe the failures the registry has (`repro list
--json`): each failure's docs/failures/<id>.md has a variant table (the
markdown table whose first column is `variant`) naming exactly the
registered variants, each row's `expected` column starting with the
variant's expectation (reproduces / passes); and README.md's catalog table
has one row per failure, in the registry's order, linking its page.
And the signatures (`signature` in `repro list --json`, per runtime): every
reproducing variant has one and no passing variant does; each page names
its reproducing variants' error names and steps in backticks; and every
example error a page shows (an `error: NAME (CODE): MESSAGE` line in a code
block, with its `process:` and `step:` lines) is one a reproducing
variant's signature matches, on simcuda or on cuda (and each page with a
reproducing variant shows at least one). And the upstream code
(`upstream.py list --json`): every page has an "## Upstream code" section;
a failure with upstream variants names each one in backticks there with
its expectation, and its README cell gives each variant's release; one
without says "re-creation only" (DGL) or "not yet". The prose around the
quotes is kept true by hand.

Usage (Bazel passes these): catalog_docs_test.py REPRO UPSTREAM_PY
"""
import json
import os
import re
import subprocess
import sys

REPRO, UPSTREAM = sys.argv[1], sys.argv[2]
# The docs are data of this test (//:catalog_docs): they sit in the
# runfiles at their workspace paths (docs/failures/<id>.md, README.md).
root = os.path.join(os.environ["TEST_SRCDIR"], os.environ["TEST_WORKSPACE"])


def listed(command):
    proc = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        print("FAIL: %s exited %d" % (" ".join(command), proc.returncode), file=sys.stderr)
        sys.exit(1)
    return json.loads(proc.stdout)


failures = listed([REPRO, "list", "--json"])
upstream = listed([sys.executable, UPSTREAM, "list", "--json"])
errors = []


def release(variant):
    """The version a variant is about: its first overlay pin's, else its base venv's."""
    pin = variant["overlay"][0] if variant["overlay"] else variant["base"].replace("-", "==", 1)
    return pin.split("==")[1]


for f in failures:
    fid = f["id"]
    rel = "docs/failures/%s.md" % fid
    path = os.path.join(root, rel)
    if not os.path.exists(path):
        continue  # reported below
    text = open(path, encoding="utf-8").read()
    section = text.split("## Upstream code", 1)[1].split("\n## ", 1)[0] if "## Upstream code" in text else None
    if section is None:
        errors.append("%s: no '## Upstream code' section" % rel)
        continue
    for v in [u for u in upstream if u["failure"] == fid]:
        want = "reproduces" if v["signature"] else "passes"
        row = [l for l in section.splitlines() if l.startswith("| `%s`" % v["variant"])]
        if not row or want not in row[0] or release(v) not in row[0]:
            errors.append("%s: the Upstream code table has no row for `%s` naming %s and '%s'"
                          % (rel, v["variant"], release(v), want))
        if v["signature"] and v["signature"] not in section.replace("`", ""):
            errors.append("%s: the Upstream code section does not quote `%s`'s signature %r"
                          % (rel, v["variant"], v["signature"]))


def cells(line):
    # "| a | b |" -> ["a", "b"]; a cell may not hold a "|" (none does today).
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(path):
    """Yields (header line number, header cells, [(line number, cells)]) per markdown table."""
    lines = open(path, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        is_table = lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|\s*:?-", lines[i + 1])
        if not is_table:
            i += 1
            continue
        header, rows, j = cells(lines[i]), [], i + 2
        while j < len(lines) and lines[j].startswith("|"):
            rows.append((j + 1, cells(lines[j])))
            j += 1
        yield i + 1, header, rows
        i = j


def names(items):
    return ", ".join(items) if items else "none"


RUNTIMES = ("simcuda", "cuda")
checked_examples = [0]


def text_matches(expected, observed):
    if expected["pattern"]:
        return re.fullmatch(expected["text"], observed) is not None
    return expected["text"] == observed


def signature_matches(sig, error):
    return (sig["name"] == error["name"] and ("code" not in sig or sig["code"] == error["code"])
            and text_matches(sig["message"], error["message"]) and text_matches(sig["process"], error["process"])
            and sig["step"] == error["step"])


def example_errors(page):
    """Yields (line number, error) for each `error: NAME (CODE): MESSAGE` line in
    a fenced code block, with the `process:` and `step:` lines after it."""
    lines, fenced = page.splitlines(), False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.fullmatch(r"error: (\S+) \((-?\d+)\): (.*)", line) if fenced else None
        if not m:
            continue
        after = dict(l.split(": ", 1) for l in lines[i + 1:i + 3] if ": " in l)
        yield i + 1, {"name": m.group(1), "code": int(m.group(2)), "message": m.group(3),
                      "process": after.get("process"), "step": after.get("step")}


def check_signatures(f, rel, page):
    fid = f["id"]
    signatures = []
    for v in f["variants"]:
        sigs = v.get("signature")
        if v["expected"] == "passes":
            if sigs is not None:
                errors.append("%s: failure %s: passing variant '%s' has a signature" % (rel, fid, v["variant"]))
            continue
        if sigs is None or sorted(sigs) != sorted(RUNTIMES):
            errors.append("%s: failure %s: reproducing variant '%s' has signatures for %s, expected %s"
                          % (rel, fid, v["variant"], names(sorted(sigs or {})), names(RUNTIMES)))
            continue
        for runtime in RUNTIMES:
            sig = sigs[runtime]
            signatures.append(sig)
            for field in ("name", "step"):
                if "`%s`" % sig[field] not in page:
                    errors.append("%s: failure %s: variant '%s' on %s: the page never names its %s `%s`"
                                  % (rel, fid, v["variant"], runtime, field, sig[field]))
    examples = list(example_errors(page))
    if signatures and not examples:
        errors.append("%s: failure %s: the page shows no example error (an `error: NAME (CODE): MESSAGE` line "
                      "in a code block)" % (rel, fid))
    checked_examples[0] += len(examples)
    for line, error in examples:
        if error["process"] is None or error["step"] is None:
            errors.append("%s:%d: failure %s: the example error is not followed by its process: and step: lines"
                          % (rel, line, fid))
        elif not any(signature_matches(sig, error) for sig in signatures):
            errors.append("%s:%d: failure %s: no reproducing variant's signature matches the example error %s"
                          % (rel, line, fid, json.dumps(error)))


for f in failures:
    fid = f["id"]
    rel = "docs/failures/%s.md" % fid
    path = os.path.join(root, rel)
    if not os.path.exists(path):
        errors.append("%s: missing for failure %s" % (rel, fid))
        continue
    variant_tables = [t for t in tables(path) if t[1] and t[1][0] == "variant"]
    if len(variant_tables) != 1:
        errors.append("%s: failure %s: expected one variant table (a markdown table whose first column "
                      "is `variant`), found %d" % (rel, fid, len(variant_tables)))
        continue
    header_line, header, rows = variant_tables[0]
    if header[-1] != "expected":
        errors.append("%s:%d: failure %s: the variant table's last column is '%s', expected 'expected'"
                      % (rel, header_line, fid, header[-1]))
        continue
    registered = {v["variant"]: v["expected"] for v in f["variants"]}
    documented = [(line, row[0].strip("`"), row[-1]) for line, row in rows]
    seen = set()
    for line, name, expected in documented:
        if name in seen:
            errors.append("%s:%d: failure %s: variant '%s' is listed twice" % (rel, line, fid, name))
        seen.add(name)
        if name not in registered:
            errors.append("%s:%d: failure %s: variant '%s' is not registered (registered: %s)"
                          % (rel, line, fid, name, names(list(registered))))
            continue
        word = re.match(r"[a-z]*", expected).group(0)
        if word != registered[name]:
            errors.append("%s:%d: failure %s: variant '%s' expects '%s' in the doc, but the registry says %s"
                          % (rel, line, fid, name, expected, registered[name]))
    missing = [name for name in registered if name not in seen]
    if missing:
        errors.append("%s:%d: failure %s: the variant table lacks registered variant(s) %s"
                      % (rel, header_line, fid, names(missing)))
    check_signatures(f, rel, open(path, encoding="utf-8").read())

# README.md: the catalog table is the one whose first column is `id`.
readme = os.path.join(root, "README.md")
catalogs = [t for t in tables(readme) if t[1] and t[1][0] == "id"]
if len(catalogs) != 1:
    errors.append("README.md: expected one catalog table (a markdown table whose first column is `id`), "
                  "found %d" % len(catalogs))
else:
    header_line, header, rows = catalogs[0]
    ids = [f["id"] for f in failures]
    if "upstream code" not in header:
        errors.append("README.md:%d: the catalog table has no `upstream code` column" % header_line)
    else:
        column = header.index("upstream code")
        for line, row in rows:
            mine = [u for u in upstream if u["failure"] == row[0]]
            cell = row[column] if column < len(row) else ""
            if mine and not all(release(u) in cell for u in mine):
                errors.append("README.md:%d: %s's upstream code cell '%s' does not name %s"
                              % (line, row[0], cell, ", ".join(release(u) for u in mine)))
            if not mine and not (cell.startswith("re-creation only") or cell == "not yet"):
                errors.append("README.md:%d: %s has no upstream variant; its cell '%s' should say "
                              "'re-creation only' or 'not yet'" % (line, row[0], cell))
    listed = [row[0] for _, row in rows]
    for line, row in rows:
        link = "[%s](docs/failures/%s.md)" % (row[0], row[0])
        if row[-1] != link:
            errors.append("README.md:%d: failure %s: the page column is '%s', expected '%s'"
                          % (line, row[0], row[-1], link))
    if listed != ids:
        extra = [i for i in listed if i not in ids]
        missing = [i for i in ids if i not in listed]
        twice = sorted({i for i in listed if listed.count(i) > 1})
        detail = []
        if missing: detail.append("no row for registered failure(s) %s" % names(missing))
        if extra: detail.append("rows for unregistered failure(s) %s" % names(extra))
        if twice: detail.append("more than one row for %s" % names(twice))
        if not detail: detail.append("rows out of order")
        errors.append("README.md:%d: catalog table: %s; rows are %s, the registry has %s"
                      % (header_line, "; ".join(detail), names(listed), names(ids)))

for e in errors:
    print("FAIL: " + e, file=sys.stderr)
if errors:
    sys.exit(1)
print("ok: %d failures, %d variants match their docs and the README catalog; %d example errors match "
      "their signatures" % (len(failures), sum(len(f["variants"]) for f in failures), checked_examples[0]))
