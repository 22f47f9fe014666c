#!/usr/bin/env node
// CPU cost of the telemetry samplers at 2 Hz: the Node side (host sampler via
// systeminformation, nvidia-smi line parsing, the ring, event fan-out) measured
// with process.cpuUsage(); nvidia-smi itself is a separate process (here a
// fake replaying a 4-GPU fixture, so its own cost is not the real tool's).
//   npm run bench:telemetry [-- --seconds 30] [-- --out FILE | --save]
import { chmodSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import { benchOutput, numberArg, REPO_ROOT as root, tempFolder } from '../../scripts/bench-output.mjs';

const require = createRequire(import.meta.url);
const { TelemetryService } = require(path.join(root, 'dist/src-main/core/telemetry/telemetry-service.js'));
const { GpuSampler } = require(path.join(root, 'dist/src-main/core/telemetry/gpu-sampler.js'));
const { EventHub } = require(path.join(root, 'dist/src-main/core/common/event-hub.js'));

const args = process.argv.slice(2);
const output = benchOutput(args);
const seconds = numberArg(args, '--seconds', 20);

// The fake nvidia-smi lives in a temporary folder removed at exit.
const dir = tempFolder('trainbench-bench-telemetry-');
const fake = path.join(dir, 'nvidia-smi');
writeFileSync(fake, `#!/bin/sh\nexport FAKE_NVIDIA_SMI_FIXTURE='${path.join(root, 'test/fixtures/nvidia-smi/multi-gpu.txt')}'\nexec '${process.execPath}' '${path.join(root, 'test/fixtures/nvidia-smi/fake-nvidia-smi.mjs')}' "$@"\n`);
chmodSync(fake, 0o755);

async function measure(withGpu) {
  const hub = new EventHub();
  let samples = 0;
  hub.subscribe((name) => name === 'telemetry.sample' && samples++);
  const service = new TelemetryService(hub, { gpu: new GpuSampler({ command: withGpu ? fake : '/nonexistent/nvidia-smi' }) });
  const { leaseId } = service.subscribe(500, 0);
  await new Promise((r) => setTimeout(r, 2000)); // warm-up: first samples, nvidia-smi start
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  samples = 0;
  const renew = setInterval(() => service.subscribe(500, 0, leaseId), 5000);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  clearInterval(renew);
  const cpu = process.cpuUsage(cpu0);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  await service.dispose();
  return { samples, seconds: wall, cpuPercentOfOneCore: (100 * (cpu.user + cpu.system)) / 1e6 / wall };
}

const host = await measure(false);
const both = await measure(true);
const result = {
  benchmark: 'telemetry-samplers',
  date: new Date().toISOString(),
  host: { hostname: os.hostname(), cpuModel: os.cpus()[0]?.model, cores: os.cpus().length },
  intervalMs: 500,
  hostSamplerOnly: host,
  hostAndGpuParsing4Gpus: both,
  note: 'Node-process CPU only (process.cpuUsage over the measured window, warm-up excluded); the nvidia-smi process is separate and here a fake.',
};
console.log(`telemetry at 2 Hz for ${seconds} s (${os.cpus()[0]?.model}):`);
console.log(`  host sampler only:                 ${host.cpuPercentOfOneCore.toFixed(2)}% of one core (${host.samples} samples)`);
console.log(`  host + parsing 4 GPUs of nvidia-smi: ${both.cpuPercentOfOneCore.toFixed(2)}% of one core (${both.samples} samples)`);
output.write(`telemetry-${os.hostname()}`, result);
