import type { Devices } from '../api/devices';

const GiB = 1024 ** 3;

function cudaVersion(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

/** The human form of `trainbench devices`. */
export function formatDevices(devices: Devices): string {
  const { cpu, cuda } = devices;
  const lines = [
    `CPU   ${cpu.name} (${cpu.arch}, ${cpu.logicalCores} logical cores${cpu.simd.length ? `, ${cpu.simd.join(' ')}` : ''})`,
  ];
  if (!cuda.compiled) {
    lines.push(`CUDA  not in this build: ${cuda.reason ?? 'unknown reason'}`);
  } else if (!cuda.available) {
    lines.push(`CUDA  runtime ${cudaVersion(cuda.runtimeVersion)}, no device: ${cuda.reason ?? 'unknown reason'}`);
  } else {
    lines.push(
      cuda.emulated
        ? 'CUDA  emulated (CPU): the CUDA backend checked on the processor, for tests; its timings are not GPU figures'
        : `CUDA  runtime ${cudaVersion(cuda.runtimeVersion)}, driver supports ${cudaVersion(cuda.driverVersion)}`,
    );
    for (const d of cuda.devices) {
      lines.push(
        `  cuda:${d.index}  ${d.name}  ${(d.totalMemoryBytes / GiB).toFixed(1)} GiB  sm_${d.computeCapability.replace('.', '')}  ${d.multiprocessors} SMs  ${d.pciBusId}`,
      );
    }
  }
  lines.push(`Training will use: ${cuda.available ? 'cuda:0' : 'cpu'}`);
  return lines.join('\n');
}
