#!/usr/bin/env bash
# Compiles every C++ source of the engine and the addon for Windows with
# MinGW-w64 (syntax only), so POSIX-only code fails CI on Linux instead of on a
# user's Windows rig. The CUDA .cu files with kernels are left out (on Windows
# nvcc builds them with MSVC, which no Linux machine has); the host-only loader
# of cuBLASLt (LoadLibrary vs dlopen) is checked, against the CUDA headers.
#
# Needs (installs nothing itself): Debian's g++-mingw-w64-x86-64-posix (the
# posix-threads variant: std::thread and std::mutex exist only there), and
# `npm ci` done (node-addon-api, node-api-headers).
#
# Usage: scripts/check-windows.sh [file.cpp ...]   (default: every source)
# Env:   TB_MINGW_CXX  compiler (default x86_64-w64-mingw32-g++-posix)
#        TB_JOBS       parallel compiles (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

cxx="${TB_MINGW_CXX:-x86_64-w64-mingw32-g++-posix}"
if ! command -v "$cxx" >/dev/null; then
  echo "check-windows: $cxx not found; install it with: apt-get install g++-mingw-w64-x86-64-posix" >&2
  exit 2
fi

# The same headers cmake-js builds the addon against: node-addon-api for
# napi.h and node-api-headers for node_api.h (Node's own include/node is the
# fallback, for a checkout where only Node is installed).
include_dir() {
  node -e '
    const [pkg, key] = process.argv.slice(1);
    try { console.log(require(pkg)[key].replace(/"/g, "")); } catch { process.exit(1); }
  ' "$1" "$2"
}
addon_api="$(include_dir node-addon-api include || true)"
node_api="$(include_dir node-api-headers include_dir || true)"
if [ -z "$node_api" ] || [ ! -f "$node_api/node_api.h" ]; then
  node_api="$(node -p 'require("path").join(process.execPath, "..", "..", "include", "node")')"
fi
if [ -z "$addon_api" ] || [ ! -f "$addon_api/napi.h" ]; then
  echo "check-windows: node-addon-api's napi.h not found; run npm ci first" >&2
  exit 2
fi
if [ ! -f "$node_api/node_api.h" ]; then
  echo "check-windows: node_api.h not found in node-api-headers or $node_api; run npm ci first" >&2
  exit 2
fi

if (($#)); then
  sources=("$@")
else
  mapfile -t sources < <(find native/src native/test bench/kernels -name '*.cpp' | sort)
  # Host-only CUDA sources: no kernels, so MinGW can read them as C++ when the CUDA headers are here.
  cuda_include="${CUDA_HOME:-/usr/local/cuda}/include"
  if [ -f "$cuda_include/cuda_runtime.h" ]; then sources+=(native/src/cuda/cublaslt.cu); fi
fi

# Flags mirror CMakeLists.txt (definitions and the per-file instruction sets),
# so a file is checked the way the Windows build compiles it.
flags_for() {
  local f="$1"
  local flags=(-std=c++17 -fsyntax-only -Wall -Wextra -Wpedantic -Inative/src -DTB_HAVE_X86_KERNELS=1)
  case "$f" in
    native/src/addon/*)
      flags+=(-I"$addon_api" -I"$node_api" -DNAPI_VERSION=8 -DNODE_ADDON_API_CPP_EXCEPTIONS
        '-DTB_VERSION="0.0.0"' -DTB_DEBUG_ENTRYPOINTS=1) ;;
    *.cu) flags=(-x c++ "${flags[@]}" -I"${CUDA_HOME:-/usr/local/cuda}/include" -Wno-pedantic) ;;
    */gemm_kernel_avx2.cpp) flags+=(-mavx2 -mfma) ;;
    */gemm_kernel_avx512.cpp) flags+=(-mavx512f -mavx512vl -mfma) ;;
  esac
  printf '%s\n' "${flags[@]}"
}

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
check_one() {
  local f="$1" log
  log="$logs/$(echo "$f" | tr '/' '_').log"
  mapfile -t flags < <(flags_for "$f")
  printf -- '---- %s\n' "$f" >"$log"
  if "$cxx" "${flags[@]}" "$f" >>"$log" 2>&1; then
    # Warnings are kept: long is 32-bit on Windows, and -Wformat or a narrowing
    # warning there is a real bug the Linux build does not see.
    if [ "$(wc -l <"$log")" -gt 1 ]; then echo "warn  $f"; else echo "ok    $f"; rm -f "$log"; fi
  else
    echo "FAIL  $f"
    mv "$log" "$log.fail"
  fi
}
export -f check_one flags_for
export cxx addon_api node_api logs

jobs="${TB_JOBS:-$(nproc)}"
printf '%s\n' "${sources[@]}" | xargs -P "$jobs" -I{} bash -c 'check_one "$1"' _ {}

# Calls that compile on Windows but misbehave there: a narrow path means the
# ANSI code page, so a UTF-8 path with non-ASCII names does not open, and
# std::rename does not replace an existing file. core/file_path.* and
# data/files.cpp are the two places that call the OS directly, per platform.
narrow_path_calls='std::fopen\(|(?<![_\w])fopen\(|std::(rename|remove)\(|std::[io]?fstream \w+\((?!fs_path\(|")'
lint="$(grep -rnP "$narrow_path_calls" native/src --include='*.cpp' --include='*.h' --include='*.cu' \
  | grep -vE '^native/src/(core/file_path\.(h|cpp)|data/files\.cpp):' || true)"
lint_failed=0
if [ -n "$lint" ]; then
  lint_failed=1
  echo
  echo "---- narrow-path file calls (open UTF-8 paths through tb::fs_path / FileReader / MappedFile, move with tb::replace_file):"
  echo "$lint"
fi

status=$lint_failed
for log in "$logs"/*.log "$logs"/*.fail; do
  [ -e "$log" ] || continue
  echo
  cat "$log"
  case "$log" in *.fail) status=1 ;; esac
done
n_fail=$(find "$logs" -name '*.fail' | wc -l)
echo
echo "check-windows: ${#sources[@]} files, $n_fail failed ($cxx); narrow-path calls: $( ((lint_failed)) && echo found || echo none)"
exit $status
