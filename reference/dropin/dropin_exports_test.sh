#!/usr/bin/env bash
# The stand-in libraries' dynamic symbols against the real libraries' lists:
# libcudart.so.13 and .12 export exactly the real 13.0 and 12.9 names, all
# under the version nodes libcudart.so.13 and libcudart.so.12; libnvidia-ml.so.1 has every NVML name PyTorch uses;
# libcuda.so.1 does not depend on the runtime library.
set -uo pipefail
cd reference/dropin
status=0
fail() { echo "FAIL: $*"; status=1; }

defined() {  # defined <library>: "name@version" of each defined dynamic symbol
  nm -D --defined-only --with-symbol-versions "$1" | awk '{print $3}' | sed 's/@@*/@/' | sort
}

for major in 13 12; do  # the runtime's major version and the real list it must match
  lib=libcudart.so.$major
  list=$(ls abi/libcudart"$major".*-exports.txt)
  expected=$(sed "s/\$/@$lib/" "$list" | sort)
  actual=$(defined "$lib" | grep -vx "$lib\(@$lib\)\{0,1\}")
  if [ "$expected" != "$actual" ]; then
    fail "$lib exports differ from $list (< missing, > extra):"
    diff <(echo "$expected") <(echo "$actual") | head -20
  fi
  soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [ "$soname" = "$lib" ] || fail "$lib's soname is '$soname'"
  echo "$lib: $(echo "$actual" | wc -l) names under node $lib"
done

nvml=$(nm -D --defined-only libnvidia-ml.so.1 | awk '{print $3}' | sort)
missing=$(comm -23 <(sort abi/torch-nvml-names.txt) <(echo "$nvml"))
[ -z "$missing" ] || fail "libnvidia-ml.so.1 lacks NVML names PyTorch uses: $missing"

needed=$(readelf -d libcuda.so.1 | grep NEEDED)
if grep -q libcudart <<<"$needed"; then fail "libcuda.so.1 depends on the runtime library: $needed"; fi
[ "$(readelf -d libcuda.so.1 | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" = libcuda.so.1 ] ||
  fail "libcuda.so.1 has the wrong soname"

[ "$status" -eq 0 ] && echo "PASS: $(echo "$nvml" | wc -l) NVML names"
exit "$status"
