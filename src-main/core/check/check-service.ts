import path from 'node:path';

import { ScriptBenchmarkRequestSchema } from '../../api/script-target';
import type { BenchmarkProgress } from '../../api/benchmark';
import { TrainingBenchmarkRequestSchema } from '../../api/benchmark';
import type { CheckedRun, CheckResult } from '../../api/check';
import { requireConsent } from '../workspace/command-consent';
import { ApiError } from '../../api/errors';
import { formatIssues } from '../../api/format-issues';
import { ID_PATTERN } from '../../api/ids';
import type { RunEnvironment, RunRecordJson } from '../../api/run-record';
import { type Confounder, confoundersOf } from '../../api/confounders';
import type { ConfounderPolicy } from '../../api/optimise';
import { type Conditions, ConditionsSchema } from '../../api/telemetry';
import { readRun } from '../workspace/run-file';
import type { BenchmarkService } from '../benchmarks/benchmark-service';
import type { Workspace } from '../workspace/workspace';
import { isFolder, readTextCapped } from '../workspace/workspace-files';
import { gateVerdict } from './gate-verdict';

export interface CheckOptions {
  /** Repetitions of the new measurement; the saved run's own count when absent. */
  repeat?: number;
  /** Relative change the gate tolerates (0.05: ±5%). */
  tolerance: number;
  /**
   * A script run's command comes from its run file, and a workspace is shared between rigs: the command runs
   * again only on the person's word for that very command: the fingerprint shown beside it (the CLI's --yes
   * FINGERPRINT). Anything else (absent, true, another fingerprint) shows the command and runs nothing.
   */
  commandConsent?: string | boolean;
  /** record: a difference in what crowded the two runs is listed but does not stop the verdict (a shared CI machine). */
  confounders?: ConfounderPolicy;
  onProgress?: (p: BenchmarkProgress) => void;
  onOutput?: (stream: 'stdout' | 'stderr', line: string, repetition: number) => void;
}

const RUN_ID_IN_TEXT = /\b\d{8}-\d{6}-[0-9a-f]{6}\b/g;
const MAX_REPORT_BYTES = 4 << 20;

/** The machine and device a run measured on, as far as they move samples/s: each difference in words. */
export function conditionDifferences(saved: RunEnvironment | undefined, now: RunEnvironment | undefined): string[] {
  if (!saved || !now) return saved === now ? [] : ['the saved run recorded no environment'];
  const out: string[] = [];
  const differ = (what: string, a: unknown, b: unknown) => {
    if (a !== b) out.push(`${what} ${JSON.stringify(a ?? null)} then, ${JSON.stringify(b ?? null)} now`);
  };
  differ('host', saved.hostname, now.hostname);
  differ('CPU', saved.cpuModel, now.cpuModel);
  differ('logical cores', saved.cpus, now.cpus);
  differ('device', saved.computeDevice?.name, now.computeDevice?.name);
  differ('emulated CUDA', saved.computeDevice?.emulated ?? false, now.computeDevice?.emulated ?? false);
  return out;
}

/** Each repetition's conditions, where the run recorded them (a workspace file: what does not read is left out). */
function conditionsOf(record: RunRecordJson): Conditions[] {
  const reps = (record.result as { repetitions?: { telemetry?: { conditions?: unknown } }[] } | undefined)?.repetitions ?? [];
  return reps.flatMap((r) => {
    const parsed = ConditionsSchema.safeParse(r?.telemetry?.conditions);
    return parsed.success ? [parsed.data] : [];
  });
}

/**
 * What crowded the repetitions of the saved run and of this one, and, when the two saw different things
 * (another process's load then but not now, a GPU slowing down), that difference in words: the gate
 * cannot tell a change of the target from a change of its neighbours.
 */
export function confounderDifference(saved: RunRecordJson, now: RunRecordJson): { confounders: CheckResult['confounders']; difference: string | null } {
  const a = confoundersOf(conditionsOf(saved));
  const b = confoundersOf(conditionsOf(now));
  const words = (xs: Confounder[]) => xs.map((x) => x.words);
  const confounders = { against: words(a), now: words(b) };
  // Runs written before conditions were recorded say nothing either way.
  if (!conditionsOf(saved).length || !conditionsOf(now).length) return { confounders, difference: null };
  const kinds = (xs: Confounder[]) => new Set(xs.map((x) => x.kind));
  const [ka, kb] = [kinds(a), kinds(b)];
  if (ka.size === kb.size && [...ka].every((k) => kb.has(k))) return { confounders, difference: null };
  const list = (xs: Confounder[]) => (xs.length ? words(xs).join('; ') : 'nothing else competing');
  return { confounders, difference: `confounded: the saved run saw ${list(a)}, this one ${list(b)}` };
}

function samplesOf(record: RunRecordJson): number[] {
  const reps = (record.result as { repetitions?: { samplesPerSec?: unknown }[] } | undefined)?.repetitions ?? [];
  return reps.map((r) => r.samplesPerSec).filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
}

const titleOf = (record: RunRecordJson) => String((record.result as { title?: unknown } | undefined)?.title ?? record.kind);

/**
 * `trainbench check`: measures the target of a saved benchmark run again, as it was measured (its request,
 * with nothing interleaved but itself), and compares the two sets of repetitions through the gate's rule.
 */
export class CheckService {
  constructor(
    private readonly workspace: Workspace,
    private readonly benchmarks: BenchmarkService,
    /** Whether a request measures the user's command (its runner's kind), which the gate runs again only with consent. */
    private readonly runsCommand: (request: object) => boolean,
  ) {}

  /** A run id as given, or the one benchmark run a report names (an ADR written by `trainbench report`). */
  async resolveAgainst(against: string): Promise<string> {
    if (ID_PATTERN.test(against)) {
      const read = await readRun(this.workspace, against);
      if (read.record) return against;
      // A run that is there but cannot be read says why (a tampered file), not that it is missing.
      if (await isFolder(this.workspace, path.posix.join('runs', against))) throw new ApiError('E_BAD_INPUT', `cannot compare with run ${against}: ${read.problem}`);
    }
    let text: string;
    try {
      text = await readTextCapped(this.workspace, against, MAX_REPORT_BYTES);
    } catch (err) {
      throw new ApiError('E_BAD_INPUT', `--against ${JSON.stringify(against)} is neither a run id (yyyymmdd-hhmmss-xxxxxx) nor a report in the workspace: ${(err as Error).message}`);
    }
    const ids = [...new Set(text.match(RUN_ID_IN_TEXT) ?? [])];
    const benchmarks: string[] = [];
    for (const id of ids) {
      const r = await readRun(this.workspace, id);
      if (r.record?.kind === 'benchmark' && r.record.status === 'completed') benchmarks.push(id);
    }
    if (benchmarks.length !== 1) {
      throw new ApiError(
        'E_BAD_INPUT',
        benchmarks.length
          ? `report ${against} names ${benchmarks.length} benchmark runs (${benchmarks.join(', ')}): pass the one to check against by its id`
          : `report ${against} names no completed benchmark run of this workspace${ids.length ? ` (it names ${ids.join(', ')})` : ''}`,
      );
    }
    return benchmarks[0];
  }

  /** A completed benchmark run, or why it cannot be compared. */
  private async benchmarkRun(id: string): Promise<RunRecordJson> {
    const read = await readRun(this.workspace, id);
    if (!read.record) throw new ApiError('E_BAD_INPUT', `cannot compare with run ${id}: ${read.problem}`);
    const r = read.record;
    if (r.kind !== 'benchmark') {
      throw new ApiError('E_BAD_INPUT', `run ${id} is a ${r.kind} run: the gate compares benchmark runs (trainbench benchmark-training, of the engine or of your command)`);
    }
    if (r.status !== 'completed') throw new ApiError('E_BAD_INPUT', `run ${id} is ${r.status}, not completed: it has no repetitions to compare`);
    return r;
  }

  /** runs.compareSpeed: the second saved benchmark judged against the first, by the gate's rule; nothing runs. */
  async compare(ids: readonly [string, string], tolerance: number): Promise<CheckResult> {
    const [a, b] = [await this.benchmarkRun(ids[0]), await this.benchmarkRun(ids[1])];
    const { confounders, difference } = confounderDifference(a, b);
    const differences = [...conditionDifferences(a.environment, b.environment), ...(difference ? [difference] : [])];
    const side = (r: RunRecordJson): CheckedRun => ({ runId: r.id, title: titleOf(r), createdAt: r.createdAt, samplesPerSec: samplesOf(r) });
    return { against: side(a), now: side(b), differences, confounders, verdict: gateVerdict(samplesOf(a), samplesOf(b), tolerance, differences) };
  }

  async run(against: string, options: CheckOptions): Promise<CheckResult> {
    if (!(options.tolerance > 0 && options.tolerance < 1)) throw new ApiError('E_BAD_INPUT', `tolerance must be between 0 and 100%, got ${100 * options.tolerance}%`);
    const id = await this.resolveAgainst(against);
    const saved = await this.benchmarkRun(id);
    const savedSamples = samplesOf(saved);
    const config = saved.config as Record<string, unknown>;
    const { jobId: _jobId, cachedData: _cachedData, ...request } = config;
    if (options.repeat !== undefined) request.repeat = options.repeat;
    let now: { runId: string; title: string };
    if (this.runsCommand(request)) {
      const parsed = ScriptBenchmarkRequestSchema.safeParse(request);
      if (!parsed.success) throw new ApiError('E_BAD_INPUT', `run ${id}'s request no longer reads: ${formatIssues(parsed.error, 'config')}`);
      // From a file anyone may have written: shown escaped, and run only as the fingerprint the person was shown.
      requireConsent(`run ${id} measured a command, which check would run again`, parsed.data, options.commandConsent);
      now = await this.benchmarks.run(parsed.data, { onProgress: options.onProgress, onOutput: options.onOutput });
    } else {
      const parsed = TrainingBenchmarkRequestSchema.safeParse(request);
      if (!parsed.success) throw new ApiError('E_BAD_INPUT', `run ${id}'s request no longer reads: ${formatIssues(parsed.error, 'config')}`);
      // Data paths come from the run's file: they stay inside the workspace, as for any request from outside.
      now = await this.benchmarks.run(parsed.data, { onProgress: options.onProgress });
    }
    const fresh = await readRun(this.workspace, now.runId);
    if (!fresh.record) throw new ApiError('E_INTERNAL', `the new run ${now.runId} does not read back: ${fresh.problem}`);
    const nowSamples = samplesOf(fresh.record);
    const { confounders, difference } = confounderDifference(saved, fresh.record);
    const counted = difference && options.confounders !== 'record' ? [difference] : [];
    const differences = [...conditionDifferences(saved.environment, fresh.record.environment), ...counted];
    return {
      against: { runId: id, title: titleOf(saved), createdAt: saved.createdAt, samplesPerSec: savedSamples },
      now: { runId: now.runId, title: now.title, createdAt: fresh.record.createdAt, samplesPerSec: nowSamples },
      differences,
      confounders,
      verdict: gateVerdict(savedSamples, nowSamples, options.tolerance, differences),
    };
  }
}
