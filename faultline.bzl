"""Project macros: compiler flags, test wiring, sanitizer-friendly tags and nvcc.

Every BUILD file uses these instead of the native rules so that flags and tags
live in one place.
"""

# Note [Deterministic sampling keys]: sampling keys must round identically on
# every device, so no compiler may fuse a multiply and an add. The host side
# is this flag, on every project target (copts do not propagate through
# header-only libraries, so it cannot live on sampling_core alone); the
# device side is nvcc's -fmad=false below. kernels/sampling_core.h and
# docs/sampling.md ("Floating point") rely on both.
_COPTS = ["-Werror=return-type", "-ffp-contract=off"]

# Test code (the tests' own sources and testonly libraries) compiles without
# optimisation: its own work is small next to the code it calls, and -O0
# compiles it in about 35 % less time than -O2 (60 % less under ASan+UBSan
# at -O1); it was half of the cold suite's compile time. The code under test
# keeps the configuration's level.
# Bit-identical results do not depend on it: -ffp-contract=off holds at
# every level, and the properties compare the -O0 test code against the
# optimised libraries.
_TEST_COPTS = _COPTS + ["-O0"]

def fl_cc_library(name, copts = [], **kwargs):
    """Declares a C++ library with the project's flags."""
    base = _TEST_COPTS if kwargs.get("testonly") else _COPTS
    native.cc_library(name = name, copts = base + copts, **kwargs)

def fl_cc_binary(name, copts = [], **kwargs):
    """Declares a C++ binary with the project's flags."""
    native.cc_binary(name = name, copts = _COPTS + copts, **kwargs)

def fl_cc_test(name, size = "small", deps = [], tags = [], copts = [], env = {}, **kwargs):
    """Declares a GoogleTest test whose main can also run registered child entry points.

    The shared main lets a test re-exec itself as a spawned child process.
    Tag "threaded" every test whose processes start a thread: the TSan stage
    of ci/test.sh runs exactly those, and in the plain build the shared main
    fails an untagged test that starts one (reference/process/thread_census.h).
    """
    native.cc_test(
        name = name,
        size = size,
        copts = _TEST_COPTS + copts,
        tags = tags,
        env = dict(env, FAULTLINE_TEST_THREADED = "1") if "threaded" in tags else env,
        deps = deps + ["//reference/process:test_main", "@system//:gtest"],
        **kwargs
    )

def fl_test_cases(name, srcs, deps = [], copts = [], **kwargs):
    """Compiles gtest sources once, for several tests that run them in different environments.

    A cc_test compiles its own srcs, so two tests over the same file compile
    it twice; tests that depend on this library (alwayslink: its TESTs
    register at static initialization) share one compile instead.
    """
    native.cc_library(
        name = name,
        testonly = True,
        srcs = srcs,
        copts = _TEST_COPTS + copts,
        alwayslink = True,
        deps = deps + ["@system//:gtest"],
        **kwargs
    )

def fl_gpu_test(name, tags = [], env = {}, **kwargs):
    """Declares a test that needs a real GPU: filtered out of the CPU suite.

    The thread census is off: the CUDA driver starts threads of its own.
    """
    fl_cc_test(name = name, tags = tags + ["gpu", "local"], env = dict(env, FAULTLINE_THREAD_CENSUS = "off"), **kwargs)

def fl_mpi_test(name, tags = [], **kwargs):
    """Declares a test that launches real `mpirun` jobs.

    exclusive: its ranks would compete for the cores with other tests; local:
    mpirun needs the host's /tmp and /dev/shm, which the sandbox hides.
    """
    fl_cc_test(name = name, tags = tags + ["mpi", "exclusive", "local"], **kwargs)

def fl_property_test(name, deps = [], **kwargs):
    """Declares a rapidcheck property test (RC_GTEST_PROP)."""
    fl_cc_test(name = name, deps = deps + ["@system//:rapidcheck"], **kwargs)

NVCC = "/usr/local/cuda/bin/nvcc"

# sm_90 covers H100/H200; the PTX lets newer GPUs JIT the same code.
# -fmad=false: see Note [Deterministic sampling keys] above.
_NVCC_FLAGS = "-std=c++17 -O2 -fmad=false -Xcompiler -fPIC -gencode arch=compute_90,code=[sm_90,compute_90] -I."

# kernel_api.h includes it; nvcc runs outside the C++ toolchain, so every
# kernel's genrule lists it.
_LAUNCH_CONFIG_H = "//reference/runtime:launch_config.h"

def _exec_config_files_impl(ctx):
    return [DefaultInfo(files = depset(ctx.files.srcs), runfiles = ctx.runfiles(files = ctx.files.srcs))]

# Forwards files built in the exec configuration. nvcc's flags are fixed
# (_NVCC_FLAGS), so its objects do not depend on the target configuration;
# built there, they would be rebuilt for every one (plain, ASan+UBSan, TSan:
# ~30 s of nvcc each). The exec configuration is the same for all three, so
# ci/test.sh runs nvcc once.
_exec_config_files = rule(
    implementation = _exec_config_files_impl,
    attrs = {"srcs": attr.label_list(cfg = "exec", allow_files = True)},
)

def fl_cuda_library(name, srcs, hdrs = [], deps = [], **kwargs):
    """Compiles .cu files with nvcc and wraps the objects in a cc_library.

    The .cu files may include only headers listed in hdrs (plus CUDA and
    Debian system headers): nvcc runs as a genrule outside the C++ toolchain,
    in the exec configuration (see _exec_config_files).
    """
    objs = []
    for src in srcs:
        obj = src.replace("/", "_").replace(".cu", ".pic.o")
        native.genrule(
            name = name + "_" + obj + "_nvcc",
            srcs = [src] + hdrs + [_LAUNCH_CONFIG_H],
            outs = [name + "/" + obj],
            cmd = "%s %s -c $(location %s) -o $@" % (NVCC, _NVCC_FLAGS, src),
            # manual: `bazel test //...` would otherwise also build it in the
            # target configuration (nvcc twice); the library needs only the
            # exec configuration's object.
            tags = ["manual"],
        )
        objs.append(name + "/" + obj)
    _exec_config_files(name = name + "_objects", srcs = objs)
    native.cc_library(
        name = name,
        srcs = [":" + name + "_objects"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart", "//reference/runtime:launch_config"],
        **kwargs
    )

def fl_device_tests(name, srcs, deps = [], cuda_name = None, env = {}, tags = [], launches_kernels = False, **kwargs):
    """Declares a device test twice: <name> on simcuda (CPU suite) and <cuda_name> on a real GPU.

    Both run the same compiled cases (<name>_cases, compiled once).
    cuda_name defaults to <name> with "_test" replaced by "_cuda_test".
    launches_kernels tags the GPU twin "kernels": ci/gpu_run.sh and ci/gpu.sh
    run compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on every such test.
    """
    fl_test_cases(name = name + "_cases", srcs = srcs, deps = deps)
    fl_cc_test(name = name, env = env, tags = tags, deps = [":" + name + "_cases"], **kwargs)
    fl_gpu_test(
        name = cuda_name or name.replace("_test", "_cuda_test"),
        env = dict(env, FAULTLINE_TEST_RUNTIME = "cuda"),
        tags = tags + (["kernels"] if launches_kernels else []),
        deps = [":" + name + "_cases"],
        **kwargs
    )

def fl_repro_tests(name, srcs, deps = [], size = "medium", tags = [], **kwargs):
    """Declares a failure's gtests twice: <name> on simcuda (CPU suite) and <name>_cuda on a real GPU."""
    fl_device_tests(
        name = name,
        cuda_name = name + "_cuda",
        size = size,
        srcs = srcs,
        tags = ["repro", "multiprocess"] + tags,
        deps = deps + ["//repro:repro_test_support"],
        **kwargs
    )

def fl_repro_failure(name, srcs = ["scenario.cc"], hdrs = ["signature.h"], deps = [], test_tags = [], **kwargs):
    """Declares documented failure <name> (e.g. "F5") in repro/<name>/.

    The scenario library is alwayslink (it registers itself and its child
    entry points at static initialization) and gets the registry and the
    scenario support; its gtests, <name lowercased>_test.cc, are declared twice
    by fl_repro_tests (simcuda, and gpu-tagged real CUDA). test_tags adds
    tags to both (["threaded"] when the scenario starts threads).
    """
    fl_cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        alwayslink = True,
        visibility = ["//repro:__pkg__"],  # linked into the repro CLI only
        deps = deps + ["//repro:registry", "//repro:scenario_support"],
        **kwargs
    )
    fl_repro_tests(
        name = name.lower() + "_test",
        srcs = [name.lower() + "_test.cc"],
        tags = test_tags,
        deps = [":" + name],
    )

def fl_fuzz_target(name, srcs, deps = [], corpus = [], smoke_tags = [], **kwargs):
    """Declares fuzz target <name> and its smoke test <name>_smoke (tag fuzz).

    srcs define LLVMFuzzerTestOneInput. With the project's toolchain, <name>
    links //properties/fuzz:standalone_main, a driver that runs the files
    given on its command line plus a bounded, deterministic set of mutations
    of each; with --config=fuzz (ci/fuzz.sh: clang with
    -fsanitize=fuzzer,address,undefined) it links libFuzzer's main instead.
    <name>_smoke runs the standalone driver on `corpus` (a list of files) in
    the plain and ASan+UBSan stages, and under TSan too when smoke_tags has
    "threaded" (the thread census checks it, as fl_cc_test's).
    """
    native.cc_library(
        name = name + "_lib",
        srcs = srcs,
        copts = _COPTS,
        # libFuzzer's main (linked last) refers to LLVMFuzzerTestOneInput.
        alwayslink = True,
        deps = deps + ["//properties/fuzz:fuzz_support"],
        **kwargs
    )
    native.cc_binary(
        name = name,
        deps = [":" + name + "_lib"] + select({
            "//properties/fuzz:libfuzzer": [],
            "//conditions:default": ["//properties/fuzz:standalone_main"],
        }),
        linkopts = select({
            "//properties/fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
    )
    native.filegroup(name = name + "_corpus", srcs = corpus)
    native.cc_test(
        name = name + "_smoke",
        size = "small",
        args = ["$(rootpaths :%s_corpus)" % name],
        data = [":" + name + "_corpus"],
        tags = ["fuzz"] + smoke_tags,
        env = {"FAULTLINE_TEST_THREADED": "1"} if "threaded" in smoke_tags else {},
        deps = [
            ":" + name + "_lib",
            "//properties/fuzz:smoke_thread_census",
            "//properties/fuzz:standalone_main",
        ],
    )

def fl_cuda_program(name, src, **kwargs):
    """Builds `src` (.cu) into a program the way a CUDA user does: nvcc -cudart shared.

    The program needs libcudart.so.13 at run time (the drop-in tests give
    it simcuda's). Built in the exec configuration (see _exec_config_files).
    """
    native.genrule(
        name = name + "_nvcc",
        srcs = [src],
        outs = [name + "_bin/" + name],
        cmd = "%s -std=c++17 -O1 -cudart shared -gencode arch=compute_90,code=sm_90 $(location %s) -o $@" % (NVCC, src),
        tags = ["manual"],
    )
    _exec_config_files(name = name, srcs = [name + "_bin/" + name], **kwargs)
