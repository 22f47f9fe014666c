import type { GpuSample } from '../../api/telemetry';

/**
 * The fields of our `nvidia-smi --query-gpu` call, in order. Throttle reasons
 * are `clocks_event_reasons.active` on current drivers and
 * `clocks_throttle_reasons.active` on older ones (the sampler falls back).
 */
export const BASE_FIELDS = [
  'index', 'uuid', 'name', 'utilization.gpu', 'utilization.memory', 'memory.used', 'memory.total', 'temperature.gpu',
  'power.draw', 'power.limit', 'clocks.sm', 'clocks.mem', 'pcie.link.gen.current', 'pcie.link.width.current',
] as const;
export const REASON_FIELDS = ['clocks_event_reasons.active', 'clocks_throttle_reasons.active'] as const;

export function queryArgs(periodMs: number, reasonField: string): string[] {
  return [`--query-gpu=${[...BASE_FIELDS, reasonField].join(',')}`, '--format=csv,noheader,nounits', `-lms`, String(periodMs)];
}

/** Bits of the clock event (throttle) reason mask, as NVML defines them. */
const REASONS: [number, string][] = [
  [0x1, 'gpu_idle'],
  [0x2, 'applications_clocks_setting'],
  [0x4, 'sw_power_cap'],
  [0x8, 'hw_slowdown'],
  [0x10, 'sync_boost'],
  [0x20, 'sw_thermal_slowdown'],
  [0x40, 'hw_thermal_slowdown'],
  [0x80, 'hw_power_brake_slowdown'],
  [0x100, 'display_clock_setting'],
];

export function decodeReasons(hex: string): string[] | null {
  if (!/^0x[0-9a-f]+$/i.test(hex)) return null;
  const mask = Number.parseInt(hex.slice(2), 16);
  return REASONS.filter(([bit]) => (mask & bit) !== 0).map(([, name]) => name);
}

/** [N/A], [Not Supported], [Unknown Error], N/A and empty cells are not numbers. */
function cell(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const v = raw.trim();
  if (v === '' || /^\[.*\]$/.test(v) || v === 'N/A') return null;
  return v;
}

function number(raw: string | undefined): number | null {
  const v = cell(raw);
  if (v === null) return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

export type ParsedLine = { kind: 'gpu'; sample: GpuSample } | { kind: 'error'; message: string } | { kind: 'skip' };

/**
 * One line of `--format=csv,noheader,nounits` output. A line that is not a
 * complete record (a driver error, a line cut off when the process died) is
 * reported, never guessed at.
 */
export function parseNvidiaSmiLine(line: string): ParsedLine {
  const text = line.trim();
  if (text === '') return { kind: 'skip' };
  const cells = text.split(',');
  const expected = BASE_FIELDS.length + 1;
  const index = Number(cells[0]);
  if (cells.length !== expected || !Number.isInteger(index)) {
    // Error lines from nvidia-smi are prose ("NVIDIA-SMI has failed because …", "Field … is not a valid field to query.")
    return cells.length < 3 || !Number.isInteger(index)
      ? { kind: 'error', message: text }
      : { kind: 'error', message: `incomplete nvidia-smi line (${cells.length} of ${expected} fields): ${text}` };
  }
  const at = (i: number) => cells[i];
  return {
    kind: 'gpu',
    sample: {
      index,
      uuid: cell(at(1)),
      name: cell(at(2)),
      utilizationGpu: number(at(3)),
      utilizationMemory: number(at(4)),
      memoryUsedMiB: number(at(5)),
      memoryTotalMiB: number(at(6)),
      temperatureC: number(at(7)),
      powerDrawW: number(at(8)),
      powerLimitW: number(at(9)),
      clockSmMHz: number(at(10)),
      clockMemMHz: number(at(11)),
      pcieGen: number(at(12)),
      pcieWidth: number(at(13)),
      throttleReasons: cell(at(14)) === null ? null : decodeReasons(cell(at(14)) as string),
    },
  };
}

/** Our `--query-compute-apps` call: the processes holding a CUDA context, on every GPU. */
export const COMPUTE_APPS_ARGS = ['--query-compute-apps=pid,process_name,used_memory', '--format=csv,noheader,nounits'];

export interface ComputeApp {
  pid: number;
  name: string;
  usedMiB: number | null;
}

/**
 * The output of COMPUTE_APPS_ARGS: one line per process per GPU ("No running processes found" and
 * driver errors are no lines). At most 256 processes are read: the rest of a runaway list says nothing new.
 */
export function parseComputeApps(text: string): ComputeApp[] {
  const apps: ComputeApp[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split(',');
    if (cells.length < 3) continue;
    const pid = Number(cells[0].trim());
    // A process name may hold commas: the pid is first and the memory last.
    const name = cells.slice(1, -1).join(',').trim();
    if (!Number.isInteger(pid) || pid <= 0 || name === '') continue;
    apps.push({ pid, name: name.slice(0, 200), usedMiB: number(cells[cells.length - 1]) });
    if (apps.length >= 256) break;
  }
  return apps;
}
