// Issue 41 items 4 and 7, their pure parts: an optimisation's run named by its data as the Optimise area names it, where
// its wizard stands in the Runs list (its saved state, its latest progress), the wizard saying each phase before its
// first repetition, the data's own progress, and the first run's defaults and estimate.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { Devices } from '../../src-main/api/devices';
import type { OptimiseChange, OptimiseProgress } from '../../src-main/api/optimise';
import { datasetNameOfId } from '../../src-main/api/datasets';
import { optimiseTargetTitle } from '../../src-main/api/optimise';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import { wizardProgressText } from '../../src-main/api/training';
import { WizardLoop } from '../../src-main/core/optimise/wizard-loop';
import type { Candidates, Repetition, WizardTarget } from '../../src-main/core/targets/target-runner';
import { listRuns } from '../../src-main/core/workspace/run-reader';
import type { Workspace } from '../../src-main/core/workspace/workspace';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { dataPreparationText, progressShort, progressText } from '../../src-renderer/components/optimise/progress-text';
import { exampleEstimate, exampleOptimiseForm } from '../../src-renderer/view-models/first-run';
import { batchSearchBlocked } from '../../src-renderer/view-models/optimise-form';
import { shortRunTitle } from '../../src-renderer/view-models/run-title';
import { tempDir } from '../helpers/temp-dir';

let t: { dir: string; cleanup(): void };
let ws: Workspace;
beforeEach(async () => {
  t = tempDir();
  ws = await openWorkspace(t.dir);
});
afterEach(() => t.cleanup());

const spec = { family: 'bottleneck_resnet' };
const request = (maxTrials = 3) => ({ target: { spec, data: { kind: 'example-board' }, options: {}, readFrom: 'cache' }, maxTrials });

function write(file: string, json: unknown): void {
  mkdirSync(path.dirname(path.join(t.dir, file)), { recursive: true });
  writeFileSync(path.join(t.dir, file), JSON.stringify(json));
}
function optimiseRun(id: string, status: string, config: Record<string, unknown>): void {
  const live = { owner: { pid: process.pid, host: 'elsewhere', startedAt: new Date().toISOString() }, heartbeatAt: new Date().toISOString() };
  write(`runs/${id}/run.json`, { schemaVersion: RUN_SCHEMA_VERSION, id, kind: 'optimise', status, createdAt: new Date().toISOString(), config, ...(status === 'running' ? live : {}) });
}

describe('an optimisation in the Runs list', () => {
  it('is named by the data it was asked for, as the Optimise area names it, not "on data"', async () => {
    optimiseRun('20261202-000001-aaaaaa', 'completed', { jobId: 'optimise-1', spec, request: request() });
    const [run] = await listRuns(ws);
    expect(run.title).toBe('optimisation: bottleneck_resnet on example-board');
    expect(shortRunTitle(run.title)).toBe(optimiseTargetTitle({ spec, data: { kind: 'example-board' } }));
    expect(run.wizard).toEqual({ id: 'optimise-1', baselineDone: null, trialsDone: null, maxTrials: 3 });
  });

  it("names a workspace dataset by its name, not its id's fingerprint", () => {
    expect(optimiseTargetTitle({ spec, data: { kind: 'dataset', train: 'flowers-3fa2c4d5e6f7' } })).toBe('bottleneck_resnet on dataset flowers');
    // A name that itself ends in a dash and hex keeps it; only the id's 12 digits go.
    expect(datasetNameOfId('run-2024-beef-0123456789ab')).toBe('run-2024-beef');
    expect(datasetNameOfId('flowers')).toBe('flowers');
  });

  it('says where its wizard stands from the saved state while it runs: baseline, then trials of at most M', async () => {
    optimiseRun('20261202-000002-bbbbbb', 'running', { jobId: 'optimise-2', spec, request: request(4) });
    write('optimise/optimise-2/state.json', { baseline: null, trials: [] });
    let [run] = await listRuns(ws);
    expect(run.status).toBe('running');
    expect(run.wizard).toEqual({ id: 'optimise-2', baselineDone: false, trialsDone: 0, maxTrials: 4 });
    expect(wizardProgressText(run.wizard)).toBe('measuring its baseline');
    write('optimise/optimise-2/state.json', { baseline: { stepMs: 1 }, trials: [{ index: 1 }] });
    [run] = await listRuns(ws);
    expect(wizardProgressText(run.wizard)).toBe('baseline measured, 1 of at most 4 trials done');
    expect(wizardProgressText(run.wizard)).not.toMatch(/step/);
  });

  it('names a script wizard by its run (its id in the Optimise area), measuring its baseline until its state is written', async () => {
    optimiseRun('20261202-000003-cccccc', 'running', { jobId: 'job-3', target: { kind: 'script', command: ['python3', 'train.py'] }, request: { maxTrials: 2 } });
    const [run] = await listRuns(ws);
    expect(run.title).toBe('optimisation: script python3 train.py');
    expect(run.wizard).toEqual({ id: '20261202-000003-cccccc', baselineDone: false, trialsDone: 0, maxTrials: 2 });
  });

  it('says its latest progress event in the wizard\'s own words, short', () => {
    const p = (over: Partial<OptimiseProgress>): OptimiseProgress => ({
      jobId: 'j', target: 'engine', runId: 'r', phase: 'baseline', trial: null, maxTrials: 3, repetition: 0, repetitions: 5, label: null, elapsedSeconds: 1, etaSeconds: null, finishedTrial: null, ...over,
    });
    expect(progressShort(p({ phase: 'preparing' }))).toBe('preparing the data');
    expect(progressShort(p({ repetition: 0 }))).toBe('baseline, repetition 1 of 5');
    expect(progressShort(p({ repetition: 5 }))).toBe('baseline measured');
    expect(progressShort(p({ phase: 'trial', trial: 1, label: 'batch size 256 -> 512', repetition: 2 }))).toBe('trial 1 of at most 3: batch size 256 -> 512, pair 3 of 5');
    expect(progressShort(p({ phase: 'final', repetition: 0 }))).toBe('final comparison with the baseline, pair 1 of 5');
    expect(progressText(p({ repetition: 0 })).text).toBe('baseline: measuring repetition 1 of 5 (the first also starts the engine and runs its warm-up steps)');
  });
});

type Config = Record<string, number>;
const change = (from: number): OptimiseChange => ({ knob: 'workers', from, to: from * 2, kind: 'pipeline', label: `workers ${from} -> ${from * 2}`, hypothesis: 'h', note: null });
class Twice implements WizardTarget<Config, Repetition> {
  readonly kind = 'engine';
  readonly unit = 'launch';
  async measure(c: Config): Promise<Repetition> {
    return { samplesPerSec: 100 * c.workers, loss: null, conditions: null, samplesPerJoule: null, energyMissing: 'cpu' };
  }
  apply(c: Config, ch: OptimiseChange): Config {
    return { ...c, workers: ch.to as number };
  }
  candidates(best: Config, exhausted: readonly string[]): Candidates {
    return { changes: exhausted.includes('workers') || best.workers >= 2 ? [] : [change(best.workers)], skipped: [] };
  }
  refuses(): null {
    return null;
  }
  words() {
    return { subject: 'it', unchanged: 'keep it', allowRecipe: 'allow' };
  }
}

describe('the wizard loop', () => {
  it('says each phase before its first repetition, not only after it (the first may take long)', async () => {
    const said: string[] = [];
    const rules = { preset: 'max-speed', repeat: 6, maxTrials: 3, allowRecipeChanges: false, lossTolerance: 0.01, confounders: 'record', objective: 'throughput' } as const;
    const loop = new WizardLoop(new Twice(), rules, { cancelled: () => false, progress: (p) => said.push(`${p.phase} ${p.repetition}/${p.repetitions}${p.finishedTrial ? ' finished' : ''}`), afterTrial: async () => undefined });
    const base = await loop.baseline({ workers: 1 });
    const state = { best: { workers: 1 }, trials: [], exhausted: [], skipped: [] };
    await loop.search(state, 0.01);
    await loop.final({ workers: 1 }, state, { samplesPerSec: { low: base[0].samplesPerSec, median: base[0].samplesPerSec, high: base[0].samplesPerSec }, noiseFloor: 0.01 });
    // Each phase's first word comes before its first repetition: 0 of 6 done.
    expect(said.filter((s) => s.includes(' 0/'))).toEqual(['baseline 0/6', 'trial 0/6', 'final 0/6']);
    expect([said[0], said[7], said[15]]).toEqual(['baseline 0/6', 'trial 0/6', 'final 0/6']);
    expect(said.at(-1)).toBe('final 6/6');
  });
});

describe('the data made ready before the baseline', () => {
  it('is said in its own words with a bar and an ETA where measurable', () => {
    const base = { jobId: 'example-board-20000-seed0', records: 5000, recordsTotal: 20000, bytesWritten: 60e6, bytesTotal: 240e6, bytesPerSec: 12e6, etaSeconds: 15 };
    expect(dataPreparationText({ ...base, phase: 'generating' })).toEqual({ text: "preparing the data: making the example's 20,000 board positions, 5,000 done", fraction: 0.25, etaSeconds: 15 });
    expect(dataPreparationText({ ...base, phase: 'reading' }).text).toBe('preparing the data: caching 20,000 records, 5,000 read');
    expect(dataPreparationText({ ...base, phase: 'publishing' })).toEqual({ text: 'preparing the data: saving the cache', fraction: null, etaSeconds: null });
  });
});

describe('the first run', () => {
  const cpu = (cores: number) => ({ cpu: { name: 'cpu', arch: 'x64', logicalCores: cores, simd: [] }, cuda: { compiled: true, available: false, reason: 'no driver', driverVersion: 0, runtimeVersion: 0, devices: [] } }) as Devices;
  const gpu = { ...cpu(8), cuda: { ...cpu(8).cuda, available: true, reason: null, devices: [{ index: 0, name: 'H100', totalMemoryBytes: 8e10, computeCapability: '9.0', multiprocessors: 132, pciBusId: '0000:01:00.0' }] } } as Devices;

  it('opens the example without a warning: no batch-size search on the CPU without a memory limit, one on a GPU', () => {
    expect(batchSearchBlocked(exampleOptimiseForm(cpu(2)))).toBeNull();
    expect(exampleOptimiseForm(cpu(2)).batchSearch).toBe(false);
    expect(exampleOptimiseForm(null).batchSearch).toBe(false);
    expect(exampleOptimiseForm(gpu).batchSearch).toBe(true);
    expect(batchSearchBlocked(exampleOptimiseForm(gpu))).toBeNull();
  });

  it('estimates from the settings and the device: the 1.6 to 2.8 minutes a 2-core CPU took are inside the range, more cores or a GPU take less', () => {
    const two = exampleEstimate(cpu(2), 5);
    expect(two).toMatchObject({ repetitions: 45, stepsEach: 10, basis: "on this computer's 2 CPU cores" });
    // 97 s with nothing kept (no final check), idle; 2 min 48 s beside a UI walk's other jobs (it said 6-10 minutes).
    expect(two.minutes[0]).toBeLessThanOrEqual(1.6);
    expect(two.minutes[1]).toBeGreaterThanOrEqual(2.8);
    expect(two.minutes[1]).toBeLessThanOrEqual(4);
    expect(exampleEstimate(cpu(16), 5).minutes[1]).toBeLessThan(two.minutes[1]);
    expect(exampleEstimate(gpu, 5).minutes[1]).toBeLessThanOrEqual(4);
    expect(exampleEstimate(gpu, 5).basis).toBe('on the GPU');
  });
});
