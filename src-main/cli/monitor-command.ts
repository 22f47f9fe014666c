import { Command } from 'commander';

import type { GpuState, TelemetrySample } from '../api/telemetry';
import { createServices } from '../core/services';
import { defaultWorkspaceDir } from '../core/workspace/workspace';
import { jsonText, textOut } from './json-out';

const bar = (pct: number | null, width = 20) => {
  if (pct === null) return '[' + ' '.repeat(width) + ']';
  const n = Math.round((Math.max(0, Math.min(100, pct)) / 100) * width);
  return '[' + '#'.repeat(n) + '.'.repeat(width - n) + ']';
};
const val = (v: number | null, unit: string, digits = 0) => (v === null ? 'n/a' : `${v.toFixed(digits)}${unit}`);
const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
const mbs = (b: number | null) => (b === null ? 'n/a' : `${(b / 1e6).toFixed(1)} MB/s`);

/** The compact live view: one block per GPU, then the host. */
export function renderMonitor(s: TelemetrySample, gpu: GpuState): string {
  const lines: string[] = [];
  if (s.gpus.length === 0) lines.push(`GPU   ${gpu.message ?? gpu.status}`);
  for (const g of s.gpus) {
    lines.push(`GPU ${g.index} ${g.name ?? ''}`);
    lines.push(`  util ${bar(g.utilizationGpu)} ${val(g.utilizationGpu, '%')}   mem ${val(g.memoryUsedMiB, '')}/${val(g.memoryTotalMiB, ' MiB')}   ${val(g.temperatureC, '°C')}   ${val(g.powerDrawW, '')}/${val(g.powerLimitW, ' W')}`);
    lines.push(`  SM ${val(g.clockSmMHz, ' MHz')}  mem ${val(g.clockMemMHz, ' MHz')}  PCIe gen ${val(g.pcieGen, '')} x${val(g.pcieWidth, '')}${g.throttleReasons?.length ? `  held down by: ${g.throttleReasons.join(', ')}` : ''}`);
  }
  const h = s.host;
  lines.push(`CPU   ${h.cpuPerCore.map((c, i) => `${i}:${bar(c, 10)}${c.toFixed(0).padStart(3)}%`).join('  ')}`);
  lines.push(`RAM   ${gib(h.memUsedBytes)} used of ${gib(h.memTotalBytes)}, swap ${gib(h.swapUsedBytes)}   disk read ${mbs(h.diskReadBytesPerSec)} write ${mbs(h.diskWriteBytesPerSec)}`);
  if (h.engineHost) lines.push(`engine host pid ${h.engineHost.pid}: ${val(h.engineHost.cpuPercent, '% CPU')}, ${h.engineHost.rssBytes === null ? 'n/a' : gib(h.engineHost.rssBytes)} resident`);
  return lines.join('\n');
}

export function monitorCommand(): Command {
  return new Command('monitor')
    .description('live GPU and host telemetry (like nvidia-smi -l, plus the CPU, memory and disks); Ctrl-C to stop')
    .option('--interval <ms>', 'sampling interval', (v) => Number(v), 500)
    .option('--json', 'print one JSON sample per line')
    .option('--count <n>', 'stop after this many samples', (v) => Number(v))
    .option('--workspace <dir>', 'workspace folder', defaultWorkspaceDir())
    .action(async (o) => {
      const services = await createServices({ workspaceDir: o.workspace });
      const tty = process.stdout.isTTY && !o.json;
      let seen = 0;
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        const { leaseId } = services.telemetry.subscribe(Math.max(100, o.interval), 0);
        const renew = setInterval(() => services.telemetry.subscribe(Math.max(100, o.interval), 0, leaseId), 5000);
        const off = services.events.subscribe((name, data) => {
          if (name !== 'telemetry.sample') return;
          const s = data as TelemetrySample;
          // The GPU sampler's state rides along, so a script that sees "gpus": [] also reads why.
          if (o.json) process.stdout.write(jsonText({ ...s, gpuState: services.telemetry.gpu.state() }) + '\n');
          else process.stdout.write((tty ? '\x1b[H\x1b[2J' : '\n') + textOut(renderMonitor(s, services.telemetry.gpu.state())) + '\n');
          if (o.count && ++seen >= o.count) {
            clearInterval(renew);
            off();
            process.off('SIGINT', stop);
            resolve();
          }
        });
      });
      await services.dispose();
    });
}
