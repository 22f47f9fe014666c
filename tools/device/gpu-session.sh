#!/usr/bin/env bash
# The whole GPU session of docs/gpu-session.md in one call, each step under its
# own time limit so one hang cannot eat the lease, every log written to $OUT
# as it goes (at most 8 files come back; a killed call still returns them):
#   env.txt              nvidia-smi, clocks, driver, PyTorch, the addon's view of the device
#   test-gpu.txt         the GPU suites (TB_REQUIRE_GPU=1): parity, training, OOM, graphs, prefetch ring, Fashion-MNIST
#   sanitizer.txt        compute-sanitizer memcheck and racecheck over every parity check once (beside the suites)
#   race.txt, gpu-race.json   bench/gpu/race.mjs: the engine against PyTorch eager and torch.compile
#   script.txt, script-results.json   the script target on the Fashion-MNIST tutorial, device=cuda
#   engine.txt           the main job (README's `npm start`) on the GPU: the one-click optimisation and its ADR report
#   wizard.txt, wizard-<gpu>.json, wizard-reports.tgz   bench:wizard (issue 42): plain, wizard and expert on bench/workloads/
#                        (only when asked: TB_SESSION_STEPS=wizard; TB_SESSION_WIZARD_ARGS picks workloads and presets)
# Run it through run.sh, which unpacks the kit:
#   bash tools/device/run.sh bash tools/device/gpu-session.sh
# Without a GPU (a dry run) every step still runs and fails or skips for that reason.
# TB_SESSION_STEPS picks the steps (default: "suites sanitizers script-benchmark script-optimise
# engine-optimise"). Measuring comes first and each measurement is a call of its own (10 minutes at most):
# TB_SESSION_STEPS=wizard (bench:wizard), then TB_SESSION_STEPS=race, then the default.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export NO_COLOR=1 FORCE_COLOR=0  # plain logs
WS=/tmp/tb-gpu-ws
DATA="${TRAINBENCH_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
PY="${TB_SESSION_PYTHON:-python3}"
VITEST=(node node_modules/vitest/vitest.mjs run --config vitest.gpu.config.mts)
summary=()
rm -f /tmp/tb-script-*.json  # no result of an earlier session passes for this one
STEPS="${TB_SESSION_STEPS:-suites sanitizers script-benchmark script-optimise engine-optimise}"
want() { [[ " $STEPS " == *" $1 "* ]]; }
t_start=$(date +%s)

# step NAME LIMIT_S LOG COMMAND...: runs it under `timeout`, appends its output to LOG, records rc and seconds.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$(date +%s)
  echo "== $name (limit ${limit}s) $(date -u +%T)" >> "$log"
  timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  local note=""
  ((rc == 124 || rc == 137)) && note=" (killed at its ${limit}s limit)"
  echo "== $name: rc $rc in $(($(date +%s) - t0)) s$note" >> "$log"
  summary+=("$(printf '%-34s rc %-3s %4s s%s' "$name" "$rc" "$(($(date +%s) - t0))" "$note")")
}

{
  date -u +%FT%TZ
  uname -a
  nvidia-smi || echo "nvidia-smi failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active --format=csv || true
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' || true
  compute-sanitizer --version 2>&1 | tail -2 || echo "no compute-sanitizer"
  node --version
  node -e 'const a=require("./build/Release/trainbench_native.node"); console.log(JSON.stringify(a.devices())); console.log(JSON.stringify(a.cublasLt()))'
  echo "TB_CUBLASLT=${TB_CUBLASLT:-} TRAINBENCH_FASHION_MNIST=${TRAINBENCH_FASHION_MNIST:-}"
} > "$OUT/env.txt" 2>&1

# The sanitizers check correctness only, so they run beside the suites; both end before anything is timed.
# The oom and graph_capture checks provoke API errors on purpose (and check them): memcheck's exit code
# counts memory errors only.
sanitize() {
  step "compute-sanitizer memcheck" 80 "$OUT/sanitizer.txt" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 node tools/device/parity-once.mjs
  step "compute-sanitizer racecheck" 110 "$OUT/sanitizer.txt" compute-sanitizer --tool racecheck --error-exitcode 3 node tools/device/parity-once.mjs
  printf '%s\n' "${summary[@]}" > "$OUT/.sanitize-summary"
}
if want sanitizers; then
  sanitize &
  sanitizer_pid=$!
fi
want suites && step "GPU suites (TB_REQUIRE_GPU=${TB_REQUIRE_GPU:-0})" 180 "$OUT/test-gpu.txt" "${VITEST[@]}"
if want sanitizers; then
  wait "$sanitizer_pid"
  [[ -f "$OUT/.sanitize-summary" ]] && mapfile -t -O "${#summary[@]}" summary < "$OUT/.sanitize-summary" && rm -f "$OUT/.sanitize-summary"
fi

# Batches 750 and 2,048 with the census; two max-autotune compiles make it long: run it as its own call (TB_SESSION_STEPS=race).
want race && step "race: engine vs PyTorch (batches 750, 2048; census)" "${TB_SESSION_RACE_LIMIT:-560}" "$OUT/race.txt" node bench/gpu/race.mjs --steps 100 --python "$PY" --census --torch-timeout "${TB_SESSION_TORCH_TIMEOUT:-200}" --out "$OUT/gpu-race.json"

# TB_SESSION_DEVICE=cpu and TB_SESSION_PYTHON=/usr/bin/python3 dry-run the script steps on a machine without a GPU.
tutorial=("$PY" test/fixtures/scripts/fashion_mnist_tutorial.py --data "$DATA" --device "${TB_SESSION_DEVICE:-cuda}" --epochs 1)
common=(--workspace "$WS" --json --no-progress --timeout 60)
# script_step TITLE LIMIT NAME SUBCOMMAND ARGS...: one CLI run on the tutorial, its JSON kept as /tmp/tb-script-NAME.json.
script_step() {
  local title=$1 limit=$2 name=$3 sub=$4
  shift 4
  step "$title" "$limit" "$OUT/script.txt" bash -c 'f=$1; shift; exec node bin/trainbench.js "$@" > "$f"' _ \
    "/tmp/tb-script-$name.json" "$sub" "${common[@]}" "$@" -- "${tutorial[@]}"
}
want script-benchmark && script_step "script: benchmark-training -- command" 60 plain benchmark-training --no-output --repeat 3 --warmup-steps 10 --steps 100
# Non-blocking copies exist on CUDA only (refused elsewhere, so a CPU dry run leaves them out).
cuda_only=(); [[ "${TB_SESSION_DEVICE:-cuda}" == cuda* ]] && cuda_only=(--set copy.non_blocking=true)
want script-benchmark && script_step "script: benchmark-training -- command, GPU overrides" 40 overrides benchmark-training --no-output --repeat 1 --warmup-steps 10 --steps 100 \
  --set cudnn.benchmark=true --set matmul.precision=high --set dataloader.pin_memory=true --set dataloader.num_workers=2 \
  --set amp.dtype=bf16 "${cuda_only[@]}"
want script-optimise && script_step "script: optimise -- command" "${TB_SESSION_OPTIMISE_LIMIT:-130}" optimise optimise --preset max-speed \
  --repeat 3 --steps 30 --warmup-steps 5 --max-trials "${TB_SESSION_OPTIMISE_TRIALS:-3}" --report
# The main job of README.md (`npm start`) on the device: the engine's one-click optimisation with its report.
engine_optimise() {
  node bin/trainbench.js optimise --workspace "$WS" --no-progress --model bottleneck_resnet --data example-board \
    --device "${TB_SESSION_DEVICE:-cuda}" --warmup-steps 2 --steps 8 --min-window 1 --max-trials "${TB_SESSION_ENGINE_TRIALS:-5}" --report
  local rc=$?
  local report; report=$(ls -t "$WS"/reports/*/*.md 2>/dev/null | head -1)
  [[ -n "$report" ]] && { echo "---- $report"; cat "$report"; }
  return $rc
}
export -f engine_optimise; export WS  # `timeout` runs programs, not functions
# bench:wizard at the full size. The whole protocol (three workloads, two presets) outlasts a session, so
# the default is one workload, one preset, 3 rounds and the expert compiling in torch.compile's default mode
# (max-autotune's tuning alone could take minutes); the JSON is written after each wizard, so a kill keeps them.
if want wizard; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr 'A-Z ' 'a-z-')
  read -r -a wizard_args <<< "${TB_SESSION_WIZARD_ARGS:---workloads resnet --presets balanced --rounds 3 --expert-compile-mode default}"
  step "bench:wizard ${wizard_args[*]}" "${TB_SESSION_WIZARD_LIMIT:-540}" "$OUT/wizard.txt" \
    node bench/wizard/wizard-bench.mjs --python "$PY" --out "$OUT/wizard-${gpu:-cpu}.json" --reports /tmp/tb-wizard-reports "${wizard_args[@]}"
  [[ -d /tmp/tb-wizard-reports ]] && tar -czf "$OUT/wizard-reports.tgz" -C /tmp/tb-wizard-reports .
fi
want engine-optimise && step "engine: optimise (npm start's job)" "${TB_SESSION_ENGINE_LIMIT:-120}" "$OUT/engine.txt" bash -c engine_optimise
# One JSON file for the three (at most 8 files come back), and the people-readable forms of each.
{ want script-benchmark || want script-optimise; } && node -e '
  const fs = require("fs"), out = process.argv[1];
  const { formatBenchmark } = require("./dist/src-main/cli/benchmark-format.js");
  const { formatScriptOptimise } = require("./dist/src-main/cli/optimise-format.js");
  const read = (name) => { try { return JSON.parse(fs.readFileSync(`/tmp/tb-script-${name}.json`, "utf8")); } catch (err) { return { missing: String(err.message).slice(0, 300) }; } };
  const wanted = process.argv[2].split(" ");
  const steps = { plain: "script-benchmark", overrides: "script-benchmark", optimise: "script-optimise" };
  const all = Object.fromEntries(Object.entries(steps).filter(([, step]) => wanted.includes(step)).map(([name]) => [name, read(name)]));
  fs.writeFileSync(out + "/script-results.json", JSON.stringify(all, null, 1));
  for (const [name, r] of Object.entries(all)) {
    console.log(`---- ${name}`);
    try { console.log(r.missing ? `no result: ${r.missing}` : name === "optimise" ? formatScriptOptimise(r) : formatBenchmark(r)); } catch (err) { console.log(`could not format: ${err.message}`); }
  }
' "$OUT" "$STEPS" >> "$OUT/script.txt" 2>&1

echo
echo "GPU session: $(($(date +%s) - t_start)) s in all"
printf '  %s\n' "${summary[@]}"
echo
[[ -f "$OUT/test-gpu.txt" ]] && grep -E "Test Files|Tests |FAIL|×|relative difference|parameter difference" "$OUT/test-gpu.txt" | head -70
[[ -f "$OUT/sanitizer.txt" ]] && grep -E "ERROR SUMMARY|RACECHECK SUMMARY|parity checks passed|^FAIL" "$OUT/sanitizer.txt" | head -12
[[ -f "$OUT/race.txt" ]] && sed -n '/^| run /,$p' "$OUT/race.txt" | head -110
[[ -f "$OUT/script.txt" ]] && grep -E "^(----|no result|benchmark |samples/s |memory |applied |setup |baseline |verdict |  [0-9]\. )" "$OUT/script.txt" | head -30
[[ -f "$OUT/wizard.txt" ]] && grep -E "^(\| |bench:wizard|== )" "$OUT/wizard.txt" | head -30
[[ -f "$OUT/engine.txt" ]] && grep -E "^(baseline|limits|  compute|  h2d|batch  |final|report )|^  [0-9] " "$OUT/engine.txt" | head -20
# The call's exit status: 1 when any step failed, so a wrapper can tell without reading the logs.
for line in "${summary[@]}"; do [[ "$line" =~ rc\ 0\  ]] || exit 1; done
exit 0
