// Issue 25, item 6: runs written before targets (the engine, or the user's own script) were remodelled
// keep opening. test/fixtures/runs-v1 holds one real run of every kind today's CLI writes into runs/
// (made at commit 593bea6 by scripts/make-run-fixtures.mjs; see its README). Copied into a fresh
// workspace, each must list with its kind, target and status, open with the numbers it measured,
// compare, trace and go into one report, through the functions the app itself calls. The expected
// numbers are copied from the fixture files, so a reader that stops understanding a field fails here.
// Do not regenerate the fixtures to make this pass: old workspaces keep these exact files.
import { cpSync, readdirSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ComparePoint, CompareRun } from '../../src-main/api/charts/compare-charts';
import { compareCurvesOption, compareThroughputOption } from '../../src-main/api/charts/compare-charts';
import { compareResults } from '../../src-main/api/compare-results';
import { ReportDetailSchema } from '../../src-main/api/reports';
import { configDifferences } from '../../src-main/api/run-config';
import { ScriptOptimiseRequestSchema } from '../../src-main/api/script-target';
import type { RunDetail, RunSummary, TrainStepEvent } from '../../src-main/api/training';
import { lastStepText, RunDetailSchema, RunSummarySchema } from '../../src-main/api/training';
import { loadWizardState } from '../../src-main/core/targets/wizard-state';
import type { LoadedRuns } from '../../src-main/core/reports/report-runs';
import { isScriptRun, loadReportRuns } from '../../src-main/core/reports/report-runs';
import { ReportService } from '../../src-main/core/reports/report-service';
import { traceRun } from '../../src-main/core/reports/trace';
import { listRuns, readRunDetail } from '../../src-main/core/workspace/run-reader';
import { loadScriptWizardState, readScriptWizardState } from '../../src-main/core/targets/wizard-state';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { scriptCompareCurve, scriptThroughput } from '../../src-main/api/charts/compare-charts';
import { REPO_ROOT } from '../helpers/repo';
import { readSafetensors } from '../helpers/safetensors';
import { tempDir } from '../helpers/temp-dir';

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'runs-v1');

interface Fixture {
  folder: string;
  id: string;
  kind: string;
  /** What the run measured: our engine, the user's own command, or neither (the loader benchmark). */
  target: 'engine' | 'script' | null;
  /** As the Runs list shows it (a killed run is stored as running and read as interrupted). */
  status: RunSummary['status'];
  title: string;
  /** The list's headline rate. */
  samplesPerSec: number | null;
}

const SCRIPT_TUTORIAL = 'script /usr/bin/python3 fashion_mnist_tutorial.py --epochs 1';
// The fixtures' MLP has one hidden layer of 32, not the family's 256-128: the list's title says so.
const FMNIST = 'mlp (hidden 32) on fashion-mnist-train (60000 records), test fashion-mnist-test (10000 records)';

/** Every fixture, oldest first (as made); the list shows them newest first. */
const RUNS = {
  engineTrain: { folder: 'engine-train', id: '20261127-033425-71c697', kind: 'train', target: 'engine', status: 'completed', title: FMNIST, samplesPerSec: 31506.16787280318 },
  engineBenchmark: {
    folder: 'engine-benchmark', id: '20261127-033427-8b1a8f', kind: 'benchmark', target: 'engine', status: 'completed',
    title: 'training benchmark: mlp (hidden 32) on fashion-mnist-train (60000 records)', samplesPerSec: 103906.84880887845,
  },
  engineBatchSearch: {
    folder: 'engine-batch-search', id: '20261127-033428-dbb39b', kind: 'batch-search', target: 'engine', status: 'completed',
    title: `batch-size search: ${FMNIST}`, samplesPerSec: 111164.91801934685,
  },
  loaderBenchmark: {
    folder: 'loader-benchmark', id: '20261127-033429-a036c0', kind: 'loader-benchmark', target: null, status: 'completed',
    title: 'loader benchmark of fashion-mnist-train', samplesPerSec: 10657169.875911282,
  },
  // Its title says "on data": the wizard keeps its data in config.request.target, where the list does not look (as written at 593bea6).
  engineOptimise: { folder: 'engine-optimise', id: '20261127-033431-16ea23', kind: 'optimise', target: 'engine', status: 'completed', title: 'optimisation: mlp (hidden 32) on fashion-mnist', samplesPerSec: 100793.79840956835 },
  engineTrainCancelled: { folder: 'engine-train-cancelled', id: '20261127-033433-d4d608', kind: 'train', target: 'engine', status: 'cancelled', title: FMNIST, samplesPerSec: null },
  engineTrainKilled: { folder: 'engine-train-killed', id: '20261127-033434-7bb88c', kind: 'train', target: 'engine', status: 'interrupted', title: FMNIST, samplesPerSec: null },
  scriptTrain: { folder: 'script-train', id: '20261127-033436-9fd31b', kind: 'train', target: 'script', status: 'completed', title: `${SCRIPT_TUTORIAL} --limit 4096`, samplesPerSec: 8738.151885195637 },
  scriptBenchmark: {
    folder: 'script-benchmark', id: '20261127-033441-336f7d', kind: 'benchmark', target: 'script', status: 'completed',
    title: `training benchmark: ${SCRIPT_TUTORIAL}`, samplesPerSec: 9111.307029615797,
  },
  scriptBatchSearch: {
    folder: 'script-batch-search', id: '20261127-033448-092a53', kind: 'batch-search', target: 'script', status: 'completed',
    title: 'batch-size search: script /usr/bin/python3 oom_guard.py', samplesPerSec: 73071.33538678808,
  },
  scriptOptimise: {
    folder: 'script-optimise', id: '20261127-033500-4b042a', kind: 'optimise', target: 'script', status: 'completed',
    title: `optimisation: ${SCRIPT_TUTORIAL} --limit 4096`, samplesPerSec: 10439.770034911013,
  },
  scriptOptimiseKilled: {
    folder: 'script-optimise-killed', id: '20261127-033520-62ead2', kind: 'optimise', target: 'script', status: 'interrupted',
    title: `optimisation: ${SCRIPT_TUTORIAL} --limit 4096`, samplesPerSec: null,
  },
} satisfies Record<string, Fixture>;
const ALL: Fixture[] = Object.values(RUNS);
const COMPLETED = ALL.filter((r) => r.status === 'completed');
const UNFINISHED = ALL.filter((r) => r.status !== 'completed');
const ENGINE_WIZARD = 'optimise-20261127-033430-a9e837';

let t: { dir: string; cleanup(): void };
let ws: Workspace;
let list: RunSummary[];
let loaded: LoadedRuns;
const details = new Map<string, RunDetail>();

beforeAll(async () => {
  t = tempDir('trainbench-migration-');
  // Each fixture folder is a workspace of its own (runs/<id>, optimise/<id>): merged, they make one.
  for (const r of ALL) cpSync(path.join(FIXTURES, r.folder), t.dir, { recursive: true });
  ws = await openWorkspace(t.dir);
  list = await listRuns(ws);
  for (const r of ALL) details.set(r.id, await readRunDetail(ws, r.id));
  loaded = await loadReportRuns(ws, COMPLETED.map((r) => r.id));
});
afterAll(() => t.cleanup());

const detail = (r: Fixture): RunDetail => details.get(r.id) as RunDetail;
const summary = (r: Fixture): RunSummary => list.find((s) => s.id === r.id) as RunSummary;
const steps = (r: Fixture) => detail(r).events.filter((e): e is TrainStepEvent => e.type === 'step');

/** A completed run as the report reads it: its result parsed by its kind's schema. */
function reported<K extends string>(r: Fixture, kind: K) {
  const run = [...loaded.runs, ...loaded.scripts].find((x) => x.id === r.id);
  expect(run?.kind, `run ${r.id} (${r.folder})`).toBe(kind);
  return run as Extract<LoadedRuns['runs'][number] | LoadedRuns['scripts'][number], { kind: K }>;
}

describe('the fixture set', () => {
  it('holds one run of each kind today writes, each folder only its own run', () => {
    const folders = readdirSync(FIXTURES, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual(ALL.map((r) => r.folder).sort());
    for (const r of ALL) expect(readdirSync(path.join(FIXTURES, r.folder, 'runs')), r.folder).toEqual([r.id]);
    expect(readdirSync(path.join(FIXTURES, RUNS.engineOptimise.folder, 'optimise'))).toEqual([ENGINE_WIZARD]);
    // Every kind the readers know is covered, on both targets where both exist.
    const kinds = new Set(ALL.map((r) => `${r.kind}/${r.target}`));
    for (const k of ['train/engine', 'benchmark/engine', 'batch-search/engine', 'optimise/engine', 'loader-benchmark/null', 'train/script', 'benchmark/script', 'batch-search/script', 'optimise/script']) {
      expect(kinds, k).toContain(k);
    }
  });
});

describe('the Runs list', () => {
  it('lists every run, newest first, each readable and valid for the contract', () => {
    expect(list.map((s) => s.id)).toEqual(ALL.map((r) => r.id).reverse());
    for (const s of list) expect(RunSummarySchema.parse(s)).toEqual(s);
    expect(list.filter((s) => s.problem !== null)).toEqual([]);
  });

  it.each(ALL.map((r) => [r.folder, r] as const))('%s: kind, target, status, title and headline rate', (_folder, r) => {
    const s = summary(r);
    expect({ kind: s.kind, status: s.status, title: s.title, samplesPerSec: s.samplesPerSec }).toEqual({ kind: r.kind, status: r.status, title: r.title, samplesPerSec: r.samplesPerSec });
    const record = detail(r).record as Parameters<typeof isScriptRun>[0];
    expect(isScriptRun(record)).toBe(r.target === 'script');
    expect(record.kind).toBe(r.kind);
    expect(record.environment?.trainbenchCommit).toBe('593bea6204b52264f7a8ba16163e3cc21b43adcb');
    expect(s.finishedAt === null).toBe(r.status === 'interrupted');
  });

  it('shows what a finished run measured and why an unfinished one stopped', () => {
    expect(summary(RUNS.engineTrain).testAccuracy).toBe(0.7335);
    expect(list.filter((s) => s.testAccuracy !== null).map((s) => s.id)).toEqual([RUNS.engineTrain.id]);
    expect(summary(RUNS.engineTrainCancelled)).toMatchObject({ error: 'E_CANCELLED: evaluation was cancelled', interruption: null, lastStep: null });
    // Killed: stored as running; its pid is gone (or, on another host, its heartbeat is long stale).
    const killed = summary(RUNS.engineTrainKilled);
    expect(killed.interruption).toContain('process 32192 on vm');
    expect(killed.lastStep).toEqual({ epoch: 1, epochs: 20, globalStep: 890, totalSteps: 18740 });
    expect(lastStepText(killed.lastStep)).toBe('at step 890 of 18,740 (epoch 1/20)');
    const wizard = summary(RUNS.scriptOptimiseKilled);
    expect(wizard.interruption).toContain('process 1307 on vm');
    expect(wizard.lastStep).toBeNull();
    for (const r of COMPLETED) expect(summary(r), r.folder).toMatchObject({ error: null, interruption: null, lastStep: null });
  });
});

describe('opening each run', () => {
  it('every run opens, valid for the contract, with its events and telemetry', () => {
    for (const r of ALL) expect(RunDetailSchema.parse(detail(r)).summary, r.folder).toEqual(summary(r));
    const counts = Object.fromEntries(ALL.map((r) => [r.folder, { events: detail(r).events.length, telemetry: detail(r).telemetry.length }]));
    expect(counts).toEqual({
      'engine-train': { events: 3, telemetry: 1 },
      // Benchmarks, searches and wizards keep events of their own (repetitions, trials, launches): not training events.
      // Their telemetry is one file per repetition or launch (telemetry-rep<i>.jsonl), read like a training run's.
      'engine-benchmark': { events: 0, telemetry: 3 },
      'engine-batch-search': { events: 0, telemetry: 0 },
      'loader-benchmark': { events: 0, telemetry: 1 },
      'engine-optimise': { events: 0, telemetry: 17 },
      'engine-train-cancelled': { events: 12, telemetry: 1 },
      'engine-train-killed': { events: 11, telemetry: 1 },
      'script-train': { events: 0, telemetry: 3 },
      'script-benchmark': { events: 0, telemetry: 4 },
      'script-batch-search': { events: 0, telemetry: 0 },
      'script-optimise': { events: 0, telemetry: 0 },
      'script-optimise-killed': { events: 0, telemetry: 0 },
    });
  });

  it('engine training run: steps, accuracy, phases, memory, loss curve and its checkpoint', () => {
    const { result } = reported(RUNS.engineTrain, 'train');
    // Written flat, before both targets shared one result: the engine's own fields are read into `target`.
    expect(result).toMatchObject({ steps: 46, samplesPerSec: 31506.16787280318, title: 'mlp on fashion-mnist-train (60000 records), test fashion-mnist-test (10000 records)', batchSize: null });
    expect(result.target).toMatchObject({ kind: 'engine', samples: 2944, data: 'fashion-mnist-train (60000 records), test fashion-mnist-test (10000 records)' });
    expect(result.target.test).toMatchObject({ loss: 0.7200599327750773, accuracy: 0.7335, samples: 10000 });
    expect(result.target.epochs).toEqual([expect.objectContaining({ epoch: 1, trainLoss: 1.1429974062989867, testAccuracy: 0.7335 })]);
    expect(result.stepTime).toMatchObject({ steadyStateMeanMs: 1.1595048809523811, warmupSteps: 4 });
    expect(result.phasesMs).toMatchObject({ forward: 0.5172374347826084, backward: 0.6473651521739133 });
    expect(result.target.memory).toMatchObject({ peakBytes: 13743864, measured: expect.objectContaining({ weights: 101800, total: 1448568 }) });
    expect(steps(RUNS.engineTrain).map((e) => [e.globalStep, e.loss])).toEqual([
      [28, 1.3482232161701795],
      [46, 0.8237572576104646],
    ]);
    const config = detail(RUNS.engineTrain).record as { config: { spec: { hidden: number[] }; options: { batchSize: number; sampleRatio: number; optimizer: { kind: string } } } };
    expect(config.config.spec.hidden).toEqual([32]);
    expect(config.config.options).toMatchObject({ batchSize: 64, sampleRatio: 0.05, optimizer: { kind: 'sgd' } });
    const checkpoint = readSafetensors(path.join(t.dir, 'runs', RUNS.engineTrain.id, 'checkpoint.safetensors'));
    expect([...checkpoint.tensors].map(([name, x]) => [name, x.shape])).toEqual([
      ['layers.0.weight', [32, 784]],
      ['layers.0.bias', [32]],
      ['out.weight', [10, 32]],
      ['out.bias', [10]],
    ]);
  });

  it('engine training benchmark: samples/s with its interval, step times, repetitions', () => {
    const { result, telemetry } = reported(RUNS.engineBenchmark, 'benchmark');
    // Written flat, before both targets shared one shape: the engine's own fields are read into `target`.
    expect(result).toMatchObject({ batchSize: 64, warmupSteps: 2, steps: 10, repeat: 3, samplesPerSec: 103906.84880887845, target: { kind: 'engine', stepsPerEpoch: 937 } });
    // Its bootstrap interval over 3 repetitions is [min, max]: read at that interval's true level, 75% (ADR 0045), not as 95%.
    expect(result.samplesPerSecCi).toEqual({ low: 99454.66211599427, median: 103906.84880887845, high: 104877.04477463235, coverage: 0.75 });
    const reps = result.repetitions.map((x) => x.samplesPerSec);
    expect([Math.min(...reps), Math.max(...reps)]).toEqual([result.samplesPerSecCi.low, result.samplesPerSecCi.high]);
    expect(result.stepTime.steadyStateMeanMs).toBe(0.623228);
    expect(result.target.predictedEpochSeconds.fromSteadyState).toBe(0.583964636);
    expect(result.repetitions.map((x) => x.samplesPerSec)).toHaveLength(3);
    expect(result.target.memory.measured?.total).toBe(1550368);
    expect(telemetry).toHaveLength(3); // one telemetry-repN.jsonl per repetition
  });

  it('engine batch-size search: the trials, the OOM, the batch chosen', () => {
    const { result } = reported(RUNS.engineBatchSearch, 'batch-search');
    // Written flat, before both targets shared one shape: the engine's own fields are read into `target`.
    expect(result).toMatchObject({ capacityBytes: 16777216, headroom: 0.1, largestFitting: 800, recommended: 800, target: { kind: 'engine', capacitySource: 'memory-limit', seedBatch: 512 } });
    expect(result.trials.map((x) => [x.batchSize, x.outcome, x.fits])).toEqual([
      [512, 'ok', true],
      [1024, 'E_OOM', false],
      [768, 'ok', true],
      [896, 'ok', false],
      [832, 'ok', false],
      [800, 'ok', true],
    ]);
    expect(result.trials[5]).toMatchObject({ samplesPerSec: 111164.91801934685, peakBytes: 14580280 });
    expect(result.verdict).toMatch(/^batch 800 fits with 10% headroom/);
  });

  it('loader benchmark: each setting swept, the best, why the source was not read in place', () => {
    const { result } = reported(RUNS.loaderBenchmark, 'loader-benchmark');
    expect(result).toMatchObject({ dataset: 'fashion-mnist-train-0d04c8899878', batchSize: 256, uncached: null, best: { workers: 0, prefetch: 2 } });
    expect(result.cached.map((c) => [c.workers, c.samplesPerSec, c.latencyP50Ms])).toEqual([
      [0, 10657169.875911282, 0.014131000000000001],
      [1, 9219811.54603605, 0.014918],
    ]);
    expect(result.uncachedReason).toContain('gzip-compressed');
  });

  it('engine optimisation wizard: baseline, diagnosis, limits, each decision, the verdict', () => {
    const { result, telemetry } = reported(RUNS.engineOptimise, 'optimise');
    expect(result).toMatchObject({ jobId: ENGINE_WIZARD, status: 'completed', preset: 'balanced', repeat: 3 });
    expect(result.baseline.samplesPerSec).toEqual({ low: 99983.59644120887, median: 100793.79840956835, high: 105041.91336471241, coverage: 0.75 }); // 3 repetitions (ADR 0045)
    expect(result.baseline.noiseFloor).toBe(0.02509240153322449);
    expect(result.diagnosis.bound).toBe('host-overhead');
    expect(result.limits.compute?.flopsPerSample).toBe(50890);
    expect(result.trials.map((x) => [x.change.knob, x.change.from, x.change.to, x.decision, x.kept])).toEqual([
      ['batchSize', 64, 128, 'inconclusive', false],
      ['loaderWorkers', 1, 2, 'reject', false],
    ]);
    expect(result.trials[0].speedup).toEqual({ low: 0.8595921121362133, median: 0.9807859993064489, high: 1.2913852811630566 });
    expect(result.skipped.map((s) => s.change.knob)).toEqual(['cudaGraph', 'gpuPrefetch', 'precision', 'pinnedMemory', 'accumulation', 'sampleRatio']);
    expect(result.final?.changes).toEqual([]);
    expect(result.final?.verdict).toBe('No change beat the noise (±2.5%): keep the baseline configuration, 100794 samples/s.');
    expect(telemetry).toHaveLength(17); // telemetry-rep1..15.jsonl
  });

  it("both targets' wizard results, written before the one schema, read with the same top-level fields", () => {
    const engine = reported(RUNS.engineOptimise, 'optimise').result;
    const script = reported(RUNS.scriptOptimise, 'script-optimise').result;
    expect(Object.keys(engine).sort()).toEqual(Object.keys(script).sort());
    expect(Object.keys(engine.baseline).sort()).toEqual(Object.keys(script.baseline).sort());
    expect(Object.keys(engine.final).sort()).toEqual(Object.keys(script.final).sort());
    // What only one target has moved into `target`: the engine's configurations and batch search, the script's command and loader.
    expect(engine.target).toMatchObject({ kind: 'engine', baseline: { config: { readFrom: expect.any(String) } }, final: { config: { readFrom: expect.any(String) } }, batchSearch: expect.anything() });
    expect(script.target).toMatchObject({ kind: 'script', command: { kind: 'script', command: expect.any(Array) } });
    // A script run from before the wizard kept its job, status and diagnosis: its run id is its job, completed, no diagnosis.
    expect(script).toMatchObject({ jobId: RUNS.scriptOptimise.id, status: 'completed', diagnosis: null, limits: null });
  });

  it('engine wizard state: read as the resume reads it', async () => {
    const state = await loadWizardState(ws, ENGINE_WIZARD);
    expect(state).toMatchObject({ jobId: ENGINE_WIZARD, schemaVersion: 2, status: 'completed', runIds: [RUNS.engineOptimise.id] });
    expect(state.trials.map((x) => x.decision)).toEqual(['inconclusive', 'reject']);
    expect(state.best.options).toMatchObject({ batchSize: 64, loaderWorkers: 1 });
    expect(state.final?.samplesPerSec.median).toBe(100793.79840956835);
  });

  it('cancelled and killed engine runs: their error and how far they got', () => {
    const cancelled = detail(RUNS.engineTrainCancelled).record as { error?: { code: string; where?: string } };
    expect(cancelled.error).toMatchObject({ code: 'E_CANCELLED', where: 'trainer.cpp:418' });
    expect(steps(RUNS.engineTrainCancelled).at(-1)).toMatchObject({ globalStep: 937, totalSteps: 18740, loss: 0.42800488385278374 });
    expect(steps(RUNS.engineTrainKilled).at(-1)).toMatchObject({ globalStep: 890, epoch: 1, loss: 0.43644216897211696 });
    expect((detail(RUNS.engineTrainKilled).record as { result?: unknown }).result).toBeUndefined();
  });

  it('script training run: steps, samples/s, data wait, loss, memory, output', () => {
    const { result, telemetry } = reported(RUNS.scriptTrain, 'script-train');
    // Written with the command as `target` and its own fields at the top: they are read into `target`, the command beside them.
    expect(result).toMatchObject({ steps: 30, device: 'cpu', batchSize: 64, samplesPerSec: 8738.151885195637 });
    expect(result.target).toMatchObject({ kind: 'script', ended: 'maxSteps', exitCode: 0, worldSize: 1, timing: 'host-clock' });
    expect(result.target.command).toEqual({ kind: 'script', command: ['/usr/bin/python3', 'fashion_mnist_tutorial.py', '--epochs', '1', '--limit', '4096'], cwd: '/work/main/test/fixtures/scripts', env: {} });
    expect(result.target.lastLoss).toEqual({ step: 30, value: 2.2872419357299805 });
    expect(result.target.dataWait).toEqual({ msPerStep: 1.30460423999466, percent: 17.812234373661813 });
    expect(result.stepTime.steadyStateMeanMs).toBe(7.324203200041666);
    expect(result.target.peakMemory.hostPeakRssBytes).toBe(332795904);
    expect(result.target.series.map((p) => [p.step, p.loss])).toEqual([
      [1, null],
      [14, 2.3060193061828613],
      [30, null],
      [30, 2.299835443496704],
    ]);
    expect(result.target.output).toMatchObject({ file: `runs/${RUNS.scriptTrain.id}/output.log`, lines: 33 });
    expect(telemetry).toHaveLength(3);
  });

  it('script benchmark: samples/s with its interval, data wait, memory, findings', () => {
    const { result, telemetry } = reported(RUNS.scriptBenchmark, 'script-benchmark');
    // Written with the command as `target`: the script's own fields are read into `target`, the command beside them.
    expect(result).toMatchObject({ batchSize: 64, warmupSteps: 2, steps: 10, repeat: 3, samplesPerSec: 9111.307029615797, target: { kind: 'script', worldSize: 1, overrides: {}, command: { kind: 'script' } } });
    expect(result.samplesPerSecCi).toEqual({ low: 8736.222192604757, median: 9111.307029615797, high: 11681.426331671753, coverage: 0.75 }); // 3 launches (ADR 0045)
    expect(result.target.dataWait).toMatchObject({ rank: 0, msPerStep: 0.744079200012493 });
    expect(result.target.memory.hostPeakRssBytes).toBe(333008896);
    expect(result.findings.map((f) => f.measurement?.name)).toEqual(['phasesPercent.data', 'samplesPerSecCi.widthPercent']);
    expect(result.repetitions.map((x) => x.samplesPerSec)).toHaveLength(3);
    expect(telemetry).toHaveLength(4);
  });

  it('script batch-size search: each batch tried, the OOMs, the batch chosen', () => {
    const { result, record } = reported(RUNS.scriptBatchSearch, 'script-batch-search');
    // Written before both targets shared one shape: cudaTotalBytes is read as the capacity, the trials' CUDA peak as their peak.
    expect(result).toMatchObject({ largestFitting: 96, recommended: 96, headroom: 0.1, device: 'cpu', capacityBytes: null, target: { kind: 'script' } });
    expect(result.trials.every((x) => x.accumulation === 1 && x.peakBytes === null && x.target.kind === 'script')).toBe(true);
    expect(result.trials.map((x) => [x.batchSize, x.outcome])).toEqual([
      [16, 'ok'],
      [32, 'ok'],
      [64, 'ok'],
      [128, 'E_OOM'],
      [96, 'ok'],
      [112, 'E_OOM'],
      [104, 'E_OOM'],
      [100, 'E_OOM'],
    ]);
    expect(result.trials[4].samplesPerSec).toBe(73071.33538678808);
    expect(result.trials[7].message).toBe('CUDA out of memory. Tried to allocate 6400 MiB (simulated at batch 100)');
    expect(result.verdict).toBe('batch 96 is the largest that fits (100: E_OOM); fastest: 96');
    expect((record.config as { target: { env: Record<string, string> } }).target.env).toEqual({ OOM_AT: '100' });
  });

  it('script optimisation wizard: baseline, each decision, the proposal, the verdict, and its saved state', async () => {
    const { result } = reported(RUNS.scriptOptimise, 'script-optimise');
    expect(result).toMatchObject({ preset: 'balanced', repeat: 2, status: 'completed', target: { kind: 'script', loader: { num_workers: 0, batch_size: 64 }, baseline: { overrides: {} }, final: { overrides: {} } } });
    expect(result.baseline?.samplesPerSec.median).toBe(10439.770034911013);
    expect(result.baseline?.noiseFloor).toBe(0.05710561299547698);
    expect(result.trials.map((x) => [x.change.knob, x.decision, x.kept])).toEqual([
      ['dataloader.num_workers', 'reject', false],
      ['dataloader.batch_size', 'proposed', false],
    ]);
    expect(result.skipped.map((s) => s.change.knob)).toEqual(['dataloader.prefetch_factor', 'dataloader.pin_memory', 'cudnn.benchmark', 'matmul.precision', 'dataloader.persistent_workers']);
    expect(result.final?.verdict).toBe('No change beat the noise (±5.7%): keep the script as it runs, 10440 samples/s.');
    expect(result.final?.proposals).toEqual([expect.stringMatching(/^dataloader\.batch_size 64 -> 128: /)]);
    const state = await readScriptWizardState(ws, RUNS.scriptOptimise.id);
    expect(state?.trials.map((x) => x.decision)).toEqual(['reject', 'proposed']);
  });

  it('killed script optimisation: its saved baseline reads, and it can be resumed from it', async () => {
    const state = await readScriptWizardState(ws, RUNS.scriptOptimiseKilled.id);
    expect(state?.baseline?.samplesPerSec).toEqual({ low: 9736.574244652256, median: 10006.857339545684, high: 10277.140434439112, coverage: 0.5 }); // 2 launches cover 50% (ADR 0045)
    expect(state?.baseline?.repetitions).toEqual([9736.574244652256, 10277.140434439112]);
    expect(state).toMatchObject({ trials: [], final: null });
    // Written before the record kept a status: the run's own says it did not end well (interrupted: failed, not cancelled).
    expect(state?.status).toBe('failed');
    const config = detail(RUNS.scriptOptimiseKilled).record as { config: { request: unknown } };
    const request = ScriptOptimiseRequestSchema.parse(config.config.request);
    expect(request).toMatchObject({ repeat: 2, steps: 5, maxTrials: 4 });
    const resumed = await loadScriptWizardState(ws, RUNS.scriptOptimiseKilled.id, request);
    expect(resumed.baseline?.samplesPerSec.median).toBe(10006.857339545684);
  });
});

describe('comparing runs', () => {
  // As CompareRuns.vue builds its curves: engine runs from their step events, script runs from their stored points.
  function compareRun(r: Fixture): CompareRun {
    const d = detail(r);
    const script = scriptCompareCurve(d);
    if (script) return { name: r.folder, ...script, startedAt: Date.parse(d.summary.createdAt) };
    const options = (d.record as { config: { options: { batchSize: number; accumulation: number } } }).config.options;
    const points: ComparePoint[] = steps(r);
    return { name: r.folder, steps: points, samplesPerStep: options.batchSize * options.accumulation, startedAt: Date.parse(d.summary.createdAt) };
  }
  const trains = [RUNS.engineTrain, RUNS.engineTrainCancelled, RUNS.engineTrainKilled, RUNS.scriptTrain];

  it('the training runs of both targets draw on one loss chart, by step and by samples seen', () => {
    const runs = trains.map(compareRun);
    expect(runs.map((r) => [r.steps.length, r.samplesPerStep])).toEqual([
      [2, 64],
      [12, 64],
      [11, 64],
      [2, 64],
    ]);
    const loss = compareCurvesOption(runs, 'loss', 'samples', 0);
    expect(loss.missing).toEqual([]);
    const series = (loss.option as { series: { name: string; data: [number, number][] }[] }).series;
    expect(series.map((s) => [s.name, s.data.at(-1)])).toEqual([
      ['engine-train', [46 * 64, 0.8237572576104646]],
      ['engine-train-cancelled', [937 * 64, 0.42800488385278374]],
      ['engine-train-killed', [890 * 64, 0.43644216897211696]],
      ['script-train', [30 * 64, 2.299835443496704]],
    ]);
    // The script records no accuracy: said so, the engine runs still drawn.
    expect(compareCurvesOption(runs, 'accuracy', 'step', 0).missing).toEqual(['script-train: no accuracy was recorded']);
  });

  it('the results side by side and samples/s over time, for runs of both targets as they were recorded', () => {
    const runs = [RUNS.engineTrain, RUNS.scriptTrain].map(detail);
    expect(runs.map((r) => r.summary.target)).toEqual(['engine', 'script']);
    const rows = Object.fromEntries(compareResults(runs).map((r) => [r.key, r]));
    expect(rows.testAccuracy.values[0]).toBeCloseTo(0.734, 3);
    expect(rows.testAccuracy.values[1]).toBeNull(); // a script reports no test accuracy
    expect(rows.trainLoss.values).toEqual([steps(RUNS.engineTrain).at(-1)?.loss, expect.any(Number)]); // the script's last loss read
    expect(rows.samplesPerSec.values).toEqual([RUNS.engineTrain.samplesPerSec, RUNS.scriptTrain.samplesPerSec]);
    expect(rows.steps.values).toEqual([46, expect.any(Number)]);
    const rate = compareThroughputOption(
      runs.map((r, i) => ({ name: ['engine', 'script'][i], points: scriptThroughput(r) ?? r.events.filter((e): e is TrainStepEvent => e.type === 'step'), startedAt: Date.parse(r.summary.createdAt) })),
    );
    expect(rate.missing).toEqual([]);
    expect(rate.label).toMatch(/^Samples\/s over time; engine mean [\d,]+, script mean [\d,]+ samples\/s$/);
  });

  it('the settings that differ between runs', () => {
    const configs = [RUNS.engineTrain, RUNS.engineTrainKilled].map((r) => (detail(r).record as { config: unknown }).config);
    expect(configDifferences(configs).filter((d) => d.key.startsWith('options.'))).toEqual([
      { key: 'options.epochs', values: ['1', '20'] },
      { key: 'options.sampleRatio', values: ['0.05', '1'] },
    ]);
    const scripts = [RUNS.scriptTrain, RUNS.scriptBenchmark].map((r) => (detail(r).record as { config: unknown }).config);
    expect(configDifferences(scripts).find((d) => d.key === 'target.command')?.values).toEqual([
      '[/usr/bin/python3, fashion_mnist_tutorial.py, --epochs, 1, --limit, 4096]',
      '[/usr/bin/python3, fashion_mnist_tutorial.py, --epochs, 1]',
    ]);
  });
});

describe('reports and traces', () => {
  it('one ADR over every run: the finished ones written up with their numbers, the unfinished named with why', async () => {
    const reports = new ReportService(ws);
    const report = ReportDetailSchema.parse(await reports.generate({ runIds: ALL.map((r) => r.id) }));
    expect(report.summary.runIds).toEqual(COMPLETED.map((r) => r.id));
    expect(report.notes.filter((n) => /^Run \S+ \(\S+\) is (cancelled|interrupted)/.test(n))).toHaveLength(UNFINISHED.length);
    const md = report.markdown;
    for (const r of ALL) expect(md, `report mentions ${r.folder}`).toContain(r.id);
    expect(md).toContain(`Run ${RUNS.engineTrainCancelled.id} (train) is cancelled (E_CANCELLED: evaluation was cancelled)`);
    expect(md).toMatch(new RegExp(`Run ${RUNS.engineTrainKilled.id} \\(train\\) is interrupted \\(.*process 32192 on vm`));
    expect(md).toMatch(new RegExp(`Run ${RUNS.scriptOptimiseKilled.id} \\(optimise\\) is interrupted \\(.*process 1307 on vm`));
    // Numbers each kind's section reads from its run file.
    for (const text of [
      '| test accuracy | 73.4 % |', // engine training run
      '| samples/s, median of repetitions | 103,907 |', // engine benchmark
      'batch 800 fits with 10% headroom', // engine batch-size search
      '#### Data-loader benchmark `20261127-033429-a036c0`: fashion-mnist-train-0d04c8899878, batch 256',
      'No change beat the noise (±2.5%): keep the baseline configuration, 100794 samples/s.', // engine wizard
      '### Attempt 3: loader workers 1 -> 2 (wizard trial 2, `20261127-033431-16ea23`)',
      '| samples/s after the warm-up (sum over ranks) | 8,738 |', // script training run
      'batch 96 is the largest that fits (100: E_OOM); fastest: 96', // script batch-size search
      '| 100 | out of memory | - | - | no | CUDA out of memory. Tried to allocate 6400 MiB (simulated at batch 100) |',
      // script wizard: its file (written before issue 27's fix) says "No change beat the noise" beside a proposed 1.44x
      'No change was kept (±5.7%): keep the script as it runs, 10440 samples/s. A recipe change beat the noise and is proposed below.',
      '- dataloader.batch_size 64 -> 128 (wizard trial 2): Proposed, not kept',
    ]) {
      expect(md).toContain(text);
    }
    expect(report.figures.map((f) => f.name).sort()).toEqual(
      [
        'phase-breakdown.svg',
        'throughput.svg',
        `memory-${RUNS.engineBenchmark.id}.svg`,
        `telemetry-host-cpu-${RUNS.engineBenchmark.id}.svg`,
        `phase-breakdown-${RUNS.engineOptimise.id}.svg`,
        `telemetry-host-cpu-${RUNS.engineOptimise.id}.svg`,
        `loader-${RUNS.loaderBenchmark.id}.svg`,
        `phases-${RUNS.engineTrain.id}.svg`,
        `loss-${RUNS.engineTrain.id}.svg`,
        'script-phases.svg',
        'script-throughput.svg',
        `telemetry-host-cpu-${RUNS.scriptBenchmark.id}.svg`,
        `script-run-throughput-${RUNS.scriptTrain.id}.svg`,
        `script-run-loss-${RUNS.scriptTrain.id}.svg`,
        `telemetry-host-cpu-${RUNS.scriptTrain.id}.svg`,
        `trials-${RUNS.engineOptimise.id}.svg`,
        `batch-size-${RUNS.engineBatchSearch.id}.svg`,
        `script-batch-size-${RUNS.scriptBatchSearch.id}.svg`,
        `script-trials-${RUNS.scriptOptimise.id}.svg`,
      ].sort(),
    );
    // Numbers that agree (issue 38): the compute floor starts from the rate every table shows, the report command
    // names every run it was written from (the command's runs too), and a wizard that kept nothing says so.
    expect(md).toContain(`It reaches 103,907 samples/s (the median of its repetitions); with data loading, copies and other overhead hidden completely it would reach at most`);
    const again = md.split('\n').filter((l) => l.startsWith('trainbench report '));
    expect(again).toHaveLength(1);
    for (const r of COMPLETED) expect(again[0]).toContain(r.id);
    expect(md).toContain(`- With the wizard's configuration (\`${RUNS.engineOptimise.id}\`): 100,794 samples/s (the baseline's: nothing was kept)`);
    // One benchmark of each target: numbered 1 and 2 across the report, not "1." twice (UI walk 7).
    expect(md).toContain(`| Metric | 1. mlp cpu b64 (\`${RUNS.engineBenchmark.id}\`) |`);
    expect(md).toMatch(/\| Metric \| 2\. as is \|/);
    // Stored and read back as the Reports view reads it.
    expect((await reports.get(report.summary.id)).markdown).toBe(md);
  });

  it('the measured steps of the engine benchmark and training run trace', async () => {
    const bench = await traceRun(ws, RUNS.engineBenchmark.id);
    const train = await traceRun(ws, RUNS.engineTrain.id);
    const slices = (trace: typeof bench.trace, name: string) => trace.traceEvents.filter((e) => e.name === name).length;
    // 3 repetitions of 10 measured steps; 46 steps less the 4 of the warm-up.
    expect([slices(bench.trace, 'forward'), slices(bench.trace, 'step 10')]).toEqual([30, 3]);
    expect([slices(train.trace, 'forward'), slices(train.trace, 'step 42')]).toEqual([42, 1]);
  });

  it("refuses to trace the script benchmark in words: a script's probe records no engine step events", async () => {
    await expect(traceRun(ws, RUNS.scriptBenchmark.id)).rejects.toMatchObject({
      code: 'E_BAD_INPUT',
      message: `run ${RUNS.scriptBenchmark.id} benchmarks a script: traces are made of the engine's step events, which a script's probe does not record`,
    });
  });
});
