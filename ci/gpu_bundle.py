#!/usr/bin/env python3
"""Packs faultline's GPU suite into one portable archive for a machine that has a
GPU but no Bazel, no package manager and no network (see ci/gpu_run.sh).

The archive holds every gpu-tagged test, the repro CLI with its plugins, the
device benchmark, their
runfiles, the shared libraries they need that such a machine may lack (found
with ldd), the toolkit's stub libcuda (for the stub-driver conformance
scenario) and manifest.json: per test its binary, runfiles, the environment
Bazel would give it, its timeout and whether it launches kernels.

Usage: ci/gpu_bundle.py [--out PATH] [--json] [--check-args]   (run from the
repository root after `bazel build`; ci/gpu_bundle.sh does both).
Exit status: 0 written, 1 it could not be (not built, too big, ...), 2 usage."""

import argparse
import json
import lzma
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

WORKSPACE = "faultline"
# Libraries every glibc-based Linux image has; everything else travels.
BASE_LIBRARIES = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libpthread.so", "libdl.so", "librt.so")
# Bazel's test timeouts per size, seconds.
SIZE_TIMEOUTS = {"small": 60, "medium": 300, "large": 900, "enormous": 3600}
DEFAULT_OUT = ".gpu-bundle/faultline-gpu-bundle.tar.xz"


def bazel(*args):
    return subprocess.run(["bazel", *args], check=True, capture_output=True, text=True).stdout


def query_tests():
    """Returns (label, env, size, tags) for every gpu-tagged test."""
    xml = bazel("query", "--output=xml", 'attr(tags, "gpu", tests(//...))')
    tests = []
    for rule in ET.fromstring(xml).iter("rule"):
        label = rule.get("name")
        env, size, tags = {}, "medium", []
        for child in rule:
            name = child.get("name")
            if child.tag == "dict" and name == "env":
                for pair in child.iter("pair"):
                    key, value = [s.get("value") for s in pair.iter("string")]
                    env[key] = value
            elif child.tag == "string" and name == "size":
                size = child.get("value")
            elif child.tag == "list" and name == "tags":
                tags = [s.get("value") for s in child.iter("string")]
        tests.append((label, env, size, tags))
    return sorted(tests)


def binary_path(label):
    package, name = label[2:].split(":")
    return os.path.join(package, name)


def needed_libraries(binary):
    """Returns {soname: path} of the shared libraries `binary` loads that are not base glibc."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if "=>" not in parts:
            continue
        soname, path = parts[0], parts[parts.index("=>") + 1]
        if path == "not" or any(soname.startswith(base) for base in BASE_LIBRARIES):
            continue
        found[soname] = path
    return found


def copy_runfiles(source, target, binaries):
    """Copies a runfiles tree, turning the bundled binaries into relative links."""
    for root, _, files in os.walk(source, followlinks=True):
        for name in files:
            src = os.path.join(root, name)
            rel = os.path.relpath(src, source)
            dst = os.path.join(target, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            real = os.path.realpath(src)
            if real in binaries:
                os.symlink(os.path.relpath(binaries[real], os.path.dirname(dst)), dst)
            else:
                shutil.copy2(real, dst)


def find_stub():
    for path in ("/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"):
        if os.path.exists(path):
            return path
    sys.exit("gpu_bundle: the toolkit's stub libcuda.so is missing (expected /usr/local/cuda/lib64/stubs/libcuda.so)")


def write_archive(root, out):
    """Writes root as out (tar.xz) through a temporary file beside it, unique
    to this run (two runs for one --out must not write one .partial), and
    removed on any error: never a half-written archive under the real name."""
    fd, partial = tempfile.mkstemp(dir=os.path.dirname(out), prefix=os.path.basename(out) + ".", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as raw, lzma.open(raw, "wb", preset=9 | lzma.PRESET_EXTREME) as xz:
            with tarfile.open(fileobj=xz, mode="w") as tar:
                tar.add(root, arcname="faultline-gpu")
        umask = os.umask(0)  # mkstemp makes it 0600; the archive gets the usual mode
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)
        os.replace(partial, out)
    except BaseException:  # SystemExit from a SIGTERM included
        try:
            os.unlink(partial)
        except FileNotFoundError:
            pass
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="archive to write (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    parser.add_argument("--check-args", action="store_true",
                        help="only check the arguments (exit 0 or 2), as ci/gpu_bundle.sh does before it builds")
    args = parser.parse_args()
    if not args.out or args.out.endswith("/") or os.path.isdir(args.out):
        parser.error(f"--out is '{args.out}'; expected the path of the archive to write, not a folder")
    if args.check_args:
        return
    # The default SIGTERM ends Python without its `finally`s: the staging
    # folder and the temporary archive would stay behind.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))

    bin_dir = bazel("info", "--config=ci", "bazel-bin").strip()
    tests = query_tests()
    if not tests:
        sys.exit("gpu_bundle: bazel query found no gpu-tagged tests")
    stage = tempfile.mkdtemp(prefix="faultline-gpu-bundle.")
    try:
        root = os.path.join(stage, "faultline-gpu")
        os.makedirs(os.path.join(root, "lib", "stubs"))
        programs = [(label, binary_path(label)) for label, *_ in tests] + [
            ("//repro:repro", "repro/repro"), ("//reference/runtime:device_probe", "reference/runtime/device_probe"),
            ("//bench:device_bench", "bench/device_bench")]
        binaries = {}  # realpath in bazel-bin -> path inside the bundle
        libraries = {}
        for label, rel in programs:
            src = os.path.join(bin_dir, rel)
            if not os.path.exists(src):
                sys.exit(f"gpu_bundle: {label} is not built ({src} missing); run bazel build first")
            dst = os.path.join(root, "bin", rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.realpath(src), dst)
            binaries[os.path.realpath(src)] = dst
            libraries.update(needed_libraries(src))
        for label, rel in programs:
            runfiles = os.path.join(bin_dir, rel + ".runfiles")
            if os.path.isdir(runfiles):
                copy_runfiles(runfiles, os.path.join(root, "bin", rel + ".runfiles"), binaries)
        # Shared libraries of the shared libraries (e.g. libdw -> libelf -> libz).
        pending = list(libraries.values())
        while pending:
            for soname, path in needed_libraries(pending.pop()).items():
                if soname not in libraries:
                    libraries[soname] = path
                    pending.append(path)
        for soname, path in sorted(libraries.items()):
            shutil.copy2(os.path.realpath(path), os.path.join(root, "lib", soname))
        shutil.copy2(find_stub(), os.path.join(root, "lib", "stubs", "libcuda.so"))

        manifest = {
            "tests": [
                {
                    "label": label,
                    "binary": os.path.join("bin", binary_path(label)),
                    "runfiles": os.path.join("bin", binary_path(label) + ".runfiles"),
                    "env": env,
                    "timeout_s": SIZE_TIMEOUTS.get(size, 300),
                    "launches_kernels": "kernels" in tags,
                    "tags": tags,
                }
                for label, env, size, tags in tests
            ],
            "repro": "bin/repro/repro",
            "device_probe": "bin/reference/runtime/device_probe",
            "device_bench": "bin/bench/device_bench",
            "libraries": sorted(libraries),
            "workspace": WORKSPACE,
        }
        with open(os.path.join(root, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)

        uncompressed = sum(
            os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(root) for n in ns
            if not os.path.islink(os.path.join(d, n)))
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        write_archive(root, os.path.abspath(args.out))
        size = os.path.getsize(args.out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)

    summary = {"archive": args.out, "bytes": size, "mib": round(size / 2**20, 1),
               "uncompressed_mib": round(uncompressed / 2**20, 1), "tests": len(tests),
               "libraries": sorted(libraries)}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"gpu_bundle: {len(tests)} gpu tests + repro, {len(libraries)} shared libraries "
              f"({', '.join(sorted(libraries))})")
        print(f"gpu_bundle: wrote {args.out}: {summary['mib']} MiB ({summary['uncompressed_mib']} MiB uncompressed)")
    if size >= 60 * 2**20:
        sys.exit(f"gpu_bundle: the archive is {summary['mib']} MiB; it must stay under 60 MiB to travel")


if __name__ == "__main__":
    main()
