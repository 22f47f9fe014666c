import { z } from 'zod';

const num = z.number().nullable();

/** One GPU's reading; null where nvidia-smi says [N/A] or [Not Supported]. */
export const GpuSampleSchema = z.object({
  index: z.number().int(),
  uuid: z.string().nullable(),
  name: z.string().nullable(),
  utilizationGpu: num,
  utilizationMemory: num,
  memoryUsedMiB: num,
  memoryTotalMiB: num,
  temperatureC: num,
  powerDrawW: num,
  powerLimitW: num,
  clockSmMHz: num,
  clockMemMHz: num,
  pcieGen: num,
  pcieWidth: num,
  /** Why clocks are held down right now (e.g. "sw_power_cap", "hw_thermal_slowdown"); null when unknown. */
  throttleReasons: z.array(z.string().max(64)).max(32).nullable(),
});
export type GpuSample = z.infer<typeof GpuSampleSchema>;

export const HostSampleSchema = z.object({
  /** Load of each logical core, percent. */
  /** At most 1,024 cores: a sample from a file is data, and a real machine's fits in a few KB. */
  cpuPerCore: z.array(z.number()).max(1024),
  memUsedBytes: z.number(),
  memAvailableBytes: z.number(),
  memTotalBytes: z.number(),
  swapUsedBytes: z.number(),
  swapTotalBytes: z.number(),
  /** Read and write rate of the file systems (all disks), bytes per second; null on the first sample. */
  diskReadBytesPerSec: num,
  diskWriteBytesPerSec: num,
  /** The engine host process, when it runs (Linux: from /proc). */
  engineHost: z.object({ pid: z.number().int(), cpuPercent: num, rssBytes: num }).nullable(),
});
export type HostSample = z.infer<typeof HostSampleSchema>;

export const TelemetrySampleSchema = z.object({
  /** ms since the epoch */
  t: z.number(),
  /** The sampling period in force when it was taken (ms): the fastest lease's; absent in older files. */
  periodMs: z.number().int().positive().optional(),
  gpus: z.array(GpuSampleSchema).max(64),
  host: HostSampleSchema,
});
export type TelemetrySample = z.infer<typeof TelemetrySampleSchema>;

export const GpuStateSchema = z.object({
  status: z.enum(['starting', 'ok', 'absent', 'error', 'restarting', 'stopped']),
  /** What a person should know: "no NVIDIA GPU found …", the driver's error line, why it restarts. */
  message: z.string().nullable(),
  restarts: z.number().int(),
});
export type GpuState = z.infer<typeof GpuStateSchema>;

/**
 * The live history (main process and every window): an hour, at about two samples a second at most (a
 * benchmark's 5 Hz samples go to its own files, not here), so the count bound never cuts the hour short.
 * The gap is a little under half a second so a 500 ms lease's samples all stay despite timer jitter.
 */
export const HISTORY_SECONDS = 3600;
export const HISTORY_MIN_GAP_MS = 450;
export const HISTORY_CAPACITY = Math.ceil((HISTORY_SECONDS * 1000) / HISTORY_MIN_GAP_MS);

/** Whether a sample taken at `t` enters the history whose newest entry was taken at `newestT`. */
export function historyKeeps(newestT: number | undefined, t: number): boolean {
  return newestT === undefined || t - newestT >= HISTORY_MIN_GAP_MS;
}

export const TelemetrySubscribeSchema = z
  .object({
    /** How often the renderer wants samples; the fastest subscriber sets the pace (min 100 ms). */
    intervalMs: z.number().int().min(100).max(60_000).default(500),
    /** History to send back now. */
    historySeconds: z.number().min(0).max(3600).default(300),
  })
  .strict();

export const TelemetrySnapshotSchema = z.object({
  gpu: GpuStateSchema,
  intervalMs: z.number().int(),
  /** The period the workbench samples at while no window watches (the app and serve keep it); null: none (the CLI). */
  backgroundIntervalMs: z.number().int().nullable(),
  history: z.array(TelemetrySampleSchema),
});
export type TelemetrySnapshot = z.infer<typeof TelemetrySnapshotSchema>;

/**
 * The machine around one measured window, for telling a measurement of the target from one of its
 * neighbours (issue 26, ADR 0028): load from processes outside the target, the CPU's clock, the GPU's
 * slowdown reasons and clock, and other processes on the GPU. Null: not known on this platform.
 */
export const ConditionsSchema = z.object({
  seconds: z.number().min(0),
  /** Logical cores of the machine. */
  cores: z.number().int().min(1).max(4096),
  /** Cores' worth of CPU the target's processes used over the window; null where it is not known or the window was under half a second. */
  targetCpuCores: num,
  /** Cores' worth used by everything else (other processes, the kernel, the hypervisor's steal), Trainbench itself aside. */
  otherCpuCores: num,
  /** Mean clock of the cores as the OS reports it, at the window's start and end (MHz). */
  cpuMHz: z.object({ start: z.number(), end: z.number() }).nullable(),
  /** For each GPU slowdown reason seen (thermal, power, hardware), the fraction of the window's samples that had it. */
  gpuSlowdown: z.record(z.string().max(64), z.number().min(0).max(1)).refine((r) => Object.keys(r).length <= 16, 'at most 16 slowdown reasons'),
  /** Median SM clock over the window's samples (the GPUs' mean); null without GPU samples. */
  gpuSmClockMHz: num,
  gpuTemperatureMaxC: num,
  /** Compute processes on the GPUs that are neither the target nor Trainbench, as "name (pid)". */
  gpuOtherProcesses: z.array(z.string().max(300)).max(64),
});
export type Conditions = z.infer<typeof ConditionsSchema>;

/** What a run achieved, stored with its result. */
export const TelemetrySummarySchema = z.object({
  samples: z.number().int(),
  gpuUtilizationMean: num,
  gpuUtilizationP95: num,
  gpuMemoryPeakMiB: num,
  gpuPowerMeanW: num,
  /** The GPUs' power integrated over the window's samples (joules), and the seconds it spans; absent in older runs. */
  gpuEnergyJ: num.optional(),
  gpuEnergySeconds: num.optional(),
  cpuMean: num,
  gpu: z.string(),
  /** What else the machine did during the window (a repetition's): absent in older runs and merged summaries. */
  conditions: ConditionsSchema.optional(),
});
export type TelemetrySummary = z.infer<typeof TelemetrySummarySchema>;

