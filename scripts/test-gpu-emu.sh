#!/usr/bin/env bash
# The CUDA backend executed on the emulated device (docs/adr/0023-emulated-cuda.md):
#   1. the emulated addon (build-emu/): test/gpu/ in forward and reverse thread order;
#   2. a ThreadSanitizer build (build-emu-tsan/): the emulator's rules and every parity check;
#   3. an AddressSanitizer build (build-emu-asan/): the same.
# Needs Boost.Context (Debian libboost-context-dev) and NVIDIA's headers (nvcc's include folder).
#   npm run test:gpu-emu            (TB_EMU_STEPS="orders tsan asan" picks steps)
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="${TB_EMU_STEPS:-orders tsan asan}"
want() { [[ " $STEPS " == *" $1 "* ]]; }
jobs=$(nproc 2>/dev/null || echo 2)
t0=$(date +%s)
lap() { echo "gpu-emu: $1 in $(($(date +%s) - t0)) s"; t0=$(date +%s); }

if want orders; then
  npx cmake-js compile --out build-emu --CDTB_CUDA_EMULATE=ON --CDTB_DEBUG_ENTRYPOINTS=OFF > build-emu.log 2>&1 || { tail -40 build-emu.log; exit 1; }
  lap "emulated addon built"
  for order in forward reverse; do
    echo "gpu-emu: the emulator's own rules, $order order"
    TB_EMU_ORDER="$order" build-emu/tb_emu_rules
    echo "gpu-emu: test/gpu/ on the emulated device, thread and block order: $order"
    # Files side by side: a kernel runs on the launching thread, so each test process is its own one-core
    # device (a real GPU is one device the files share: vitest.gpu.config.mts runs them one at a time).
    TRAINBENCH_ADDON="$PWD/build-emu/Release/trainbench_native.node" TB_EMU_ORDER="$order" TB_REQUIRE_GPU=1 \
      node node_modules/vitest/vitest.mjs run --config vitest.gpu.config.mts --maxWorkers "$jobs"
    lap "test/gpu/ in $order order"
  done
fi

sanitized_parity() {
  local kind=$1 dir=build-emu-$1
  cmake -S . -B "$dir" -DTB_CUDA_EMULATE=ON -DTB_EMU_SANITIZE="$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$dir.log" 2>&1 || { tail -40 "$dir.log"; exit 1; }
  cmake --build "$dir" --target tb_emu_parity tb_emu_rules -j "$jobs" >> "$dir.log" 2>&1 || { tail -40 "$dir.log"; exit 1; }
  lap "$kind parity driver built"
  # halt_on_error: any report fails the run, with the report above it. The rules first: their kernels
  # fail on purpose, so the failure paths (a block abandoned mid-kernel) run under the sanitizer too.
  export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ASAN_OPTIONS="halt_on_error=1 detect_leaks=0"
  "$dir/tb_emu_rules" > "$dir-rules.log" 2>&1 || { cat "$dir-rules.log"; exit 1; }
  tail -1 "$dir-rules.log"
  TB_EMU_ORDER=random:7 "$dir/tb_emu_parity" 2
  unset TSAN_OPTIONS ASAN_OPTIONS
  lap "rules and parity checks under $kind"
}
want tsan && sanitized_parity tsan thread
want asan && sanitized_parity asan address
echo "gpu-emu: done"
