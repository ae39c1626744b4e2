#!/usr/bin/env bash
# The stand-in libraries' dynamic symbols against the real libraries' lists:
# libcudart.so.13 exports exactly the real 13.0 names, all under the version
# node libcudart.so.13; libnvidia-ml.so.1 has every NVML name PyTorch uses;
# libcuda.so.1 does not depend on the runtime library.
set -uo pipefail
cd reference/dropin
status=0
fail() { echo "FAIL: $*"; status=1; }

defined() {  # defined <library>: "name@version" of each defined dynamic symbol
  nm -D --defined-only --with-symbol-versions "$1" | awk '{print $3}' | sed 's/@@*/@/' | sort
}

expected=$(sed 's/$/@libcudart.so.13/' abi/libcudart13.0-exports.txt | sort)
actual=$(defined libcudart.so.13 | grep -vx 'libcudart.so.13\(@libcudart.so.13\)\{0,1\}')
if [ "$expected" != "$actual" ]; then
  fail "libcudart.so.13 exports differ from the real 13.0 list (< missing, > extra):"
  diff <(echo "$expected") <(echo "$actual") | head -20
fi
soname=$(readelf -d libcudart.so.13 | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = libcudart.so.13 ] || fail "libcudart.so.13's soname is '$soname'"

nvml=$(nm -D --defined-only libnvidia-ml.so.1 | awk '{print $3}' | sort)
missing=$(comm -23 <(sort abi/torch-nvml-names.txt) <(echo "$nvml"))
[ -z "$missing" ] || fail "libnvidia-ml.so.1 lacks NVML names PyTorch uses: $missing"

needed=$(readelf -d libcuda.so.1 | grep NEEDED)
if grep -q libcudart <<<"$needed"; then fail "libcuda.so.1 depends on the runtime library: $needed"; fi
[ "$(readelf -d libcuda.so.1 | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = libcuda.so.1 ] ||
  fail "libcuda.so.1 has the wrong soname"

[ "$status" -eq 0 ] && echo "PASS: $(echo "$actual" | wc -l) libcudart names, $(echo "$nvml" | wc -l) NVML names"
exit "$status"
