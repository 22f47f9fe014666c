#!/usr/bin/env node
// Runs every GPU parity check once (seed 1), one line per op, flushed as it
// goes: small enough to run under compute-sanitizer (memcheck, racecheck),
// which vitest's worker processes would hide from it. Exit 1 when a check
// fails its tolerance or throws; the sanitizer's own verdict is its exit code.
//   compute-sanitizer --tool memcheck node tools/device/parity-once.mjs [op...]
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const addon = createRequire(import.meta.url)(path.join(root, 'build', 'Release', 'trainbench_native.node'));
const cuda = addon.devices().cuda;
if (!cuda.available) {
  console.error(`parity-once: no usable CUDA device: ${cuda.reason}`);
  process.exit(2);
}
const lt = addon.cublasLt();
const ops = process.argv.length > 2 ? process.argv.slice(2) : addon.cudaParityOps().filter((op) => lt.loaded || !op.startsWith('gemm_lt_'));
let failed = 0;
for (const op of ops) {
  const t0 = performance.now();
  try {
    const r = addon.cudaParity(op, 1);
    const ok = r.maxRelError <= r.tolerance;
    if (!ok) failed++;
    console.log(`${ok ? 'ok  ' : 'FAIL'} ${op.padEnd(24)} error ${Number(r.maxRelError).toExponential(2)} <= ${Number(r.tolerance).toExponential(2)}  ${r.shapes ?? ''}  ${(performance.now() - t0).toFixed(0)} ms`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${op.padEnd(24)} threw ${err.code ?? ''} ${err.message}`);
  }
}
console.log(`${ops.length - failed} of ${ops.length} parity checks passed${lt.loaded ? '' : ` (cuBLASLt ones skipped: ${lt.reason})`}`);
process.exit(failed ? 1 : 0);
