import { z } from 'zod';

/**
 * A job of several ranks, at its collectives (issue 40): the straggler the others wait for, how much of the step
 * waits on communication, and the all-reduce bandwidth achieved. Absent for a single process or a job whose
 * collectives were not timed (no DDP model, no torch.distributed call on host tensors).
 */
export const ScriptCollectivesSchema = z.object({
  /** The rank named the straggler, or null: none stands out beyond the noise. */
  straggler: z.number().int().nullable(),
  /** What makes it late: waiting for data, compute, or host work; null when none is named. */
  phase: z.enum(['data', 'compute', 'host']).nullable(),
  /** How late it (or the latest on average) arrives, median over steps, ms after the others' median arrival. */
  lateMs: z.number(),
  /** Per rank, the share of steps at which it arrived last, with its 95% interval. */
  lastShare: z.array(z.object({ rank: z.number().int(), share: z.number(), low: z.number(), high: z.number() })),
  /** The verdict in words, with the numbers it rests on. */
  why: z.string(),
  /** Steps every rank reported collectives for. */
  steps: z.number().int(),
  /** Median share of the step spent in collectives after the last rank arrived (communication nobody overlapped). */
  exposedShare: z.number(),
  /**
   * Median all-reduce bus bandwidth, bytes/s (bytes x 2(n-1)/n over the time from the last arrival to completion);
   * null when timed per step with several buckets (their all-reduces overlap the backward: only per bucket says it).
   */
  busBytesPerSec: z.number().nullable(),
  /**
   * The all-reduce floor between these ranks: after the measured steps every rank all-reduces a buffer of the step's
   * gradient bytes (at most 256 MB) on the job's own process group, alone, 5 times; the median's time and bus
   * bandwidth. What the link gives an all-reduce with nothing else running, to read the job's against. null: not
   * measured (the script ran to its own end; absent in results from before it).
   */
  floor: z.object({ bytes: z.number(), ms: z.number(), busBytesPerSec: z.number() }).nullable().optional(),
  /**
   * Scaling efficiency (asked for with --one-node): the same job launched on this node alone, and the job's samples/s
   * over `nodes` times that one node's (1: each node adds all it has).
   */
  scaling: z.object({ nodes: z.number().int().min(2), oneNodeSamplesPerSec: z.number(), efficiency: z.number() }).nullable().optional(),
  /** Collectives per step and their bytes (one rank's). */
  perStep: z.object({ count: z.number().int(), bytes: z.number() }),
  /**
   * How they were timed: once a step from DDP's own stamps (arrival: the backward's end; the default, ~0.2-0.3 ms a
   * step on a 2-core CPU), or each gradient bucket through a comm hook (asked for; it costs small steps). Results from before the
   * per-step timing were per bucket.
   */
  timing: z.enum(['step', 'bucket']).default('bucket'),
  /**
   * The last few measured steps as a timeline (ranks as rows, collectives as marks): per rank, each collective's
   * arrival and completion, ms after the step's first arrival on any rank, on the collector's clock. Bounded: at most
   * TIMELINE_STEPS steps, TIMELINE_RANKS ranks and TIMELINE_COLLECTIVES collectives a step (`cut` says what was left out).
   */
  timeline: z
    .object({
      steps: z.array(z.number().int()),
      ranks: z.array(z.object({ rank: z.number().int(), marks: z.array(z.object({ step: z.number().int(), index: z.number().int(), arriveMs: z.number(), doneMs: z.number() })) })),
      cut: z.string().nullable(),
    })
    .optional(),
  /** Each rank's clock against the collector's (NTP-style probes), or null where it was not measured. */
  clocks: z.array(z.object({ rank: z.number().int(), node: z.string().nullable(), offsetMs: z.number().nullable(), uncertaintyMs: z.number().nullable() })),
});
export const TIMELINE_STEPS = 3;
export const TIMELINE_RANKS = 64;
export const TIMELINE_COLLECTIVES = 64;

export type ScriptCollectives = z.infer<typeof ScriptCollectivesSchema>;

/** The floor in words: "3.52 GB/s (1.6 MB in 0.91 ms)", and the job's share of it where its bandwidth was measured. */
export function floorWords(c: ScriptCollectives): string | null {
  const f = c.floor;
  if (!f) return null;
  const mb = f.bytes >= 1e6 ? `${(f.bytes / 1e6).toFixed(1)} MB` : `${(f.bytes / 1e3).toFixed(1)} kB`;
  const share = c.busBytesPerSec !== null && f.busBytesPerSec > 0 ? `; the job's all-reduces reach ${((100 * c.busBytesPerSec) / f.busBytesPerSec).toFixed(0)}% of it` : '';
  return `${(f.busBytesPerSec / 1e9).toFixed(2)} GB/s bus bandwidth (${mb} all-reduced alone in ${f.ms.toFixed(2)} ms)${share}`;
}

/** Scaling in words: "88% (2 nodes: 1,234 samples/s; this node alone 700)". */
export function scalingWords(c: ScriptCollectives): string | null {
  const s = c.scaling;
  if (!s) return null;
  const jobSamplesPerSec = s.efficiency * s.nodes * s.oneNodeSamplesPerSec;
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  return `${(100 * s.efficiency).toFixed(0)}% (${s.nodes} nodes: ${n(jobSamplesPerSec)} samples/s; this node alone: ${n(s.oneNodeSamplesPerSec)})`;
}
