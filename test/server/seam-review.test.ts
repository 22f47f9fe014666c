// Review of issue 39's target seam through the router, as serve mode uses it: hostile ids, ids shared by two
// targets' wizards, cancels racing a job's start. A test here fails where the seam has a defect.
import { describe, expect, it } from 'vitest';

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../../src-main/api/errors';
import { OptimiseRequestSchema } from '../../src-main/api/optimise';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import type { Services } from '../../src-main/core/services';
import { initialState } from '../../src-main/core/targets/engine/resumable-run';
import { saveWizardState } from '../../src-main/core/targets/wizard-state';
import { servicesPerTest } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

const newServices = servicesPerTest();
const services = (allowScripts?: boolean): Promise<Services> => newServices({ allowScripts });

const errorOf = (p: Promise<unknown>): Promise<ApiError> =>
  p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v).slice(0, 200)}`);
    },
    (e: unknown) => e as ApiError,
  );

const until = async (what: string, ok: () => Promise<boolean> | boolean, ms = 60_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const mlp = { family: 'mlp', input: [1, 28, 28], outputs: 10 };

/** A stopped script optimisation run as a workspace could hold it (copied from another rig). */
function plantScriptWizardRun(s: Services, id: string, cwd: string, marker = 'ran-a-command'): void {
  const target = { kind: 'script', command: ['/bin/sh', '-c', `touch ${marker}`], cwd, env: {} };
  const now = new Date().toISOString();
  const dir = s.workspace.resolve(path.join('runs', id));
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'run.json'),
    JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id, kind: 'optimise', status: 'cancelled', createdAt: now, finishedAt: now, config: { target, request: { target, steps: 1, repeat: 2 }, jobId: id } }),
  );
}

/** A stopped engine wizard's state (optimise/<id>/state.json), schema v2. */
async function plantEngineWizard(s: Services, id: string, status: 'cancelled' | 'failed' = 'cancelled', data: object = { kind: 'fashion-mnist' }): Promise<void> {
  const request = OptimiseRequestSchema.parse({ target: { spec: mlp, data, options: { batchSize: 32 } }, repeat: 2, steps: 5, warmupSteps: 1, maxTrials: 1, jobId: id });
  await saveWizardState(s.workspace, { ...initialState(id, request), status, message: 'stopped' });
}

describe('the seam under hostile ids', () => {
  it('refuses ids that are paths, hidden names or too long, for every id-taking method, before touching the disk', async () => {
    const s = await services(true);
    const bad = ['../escape', 'a/b', '.hidden', '..', '', 'x'.repeat(129), 'a\u0000b'];
    for (const jobId of bad) {
      for (const [method, params] of [
        ['optimise.state', { jobId }],
        ['optimise.resume', { jobId }],
        ['train.run', { spec: mlp, data: { kind: 'fashion-mnist' }, jobId }],
        ['optimise.start', { target: { spec: mlp, data: { kind: 'fashion-mnist' } }, jobId }],
      ] as const) {
        const err = await errorOf(s.router.dispatch(method, params));
        expect(err.code, `${method} ${JSON.stringify(jobId)}`).toBe('E_BAD_REQUEST');
      }
    }
    // jobs.cancel takes any short string (it only looks the id up): never a path, never a job.
    for (const jobId of bad) {
      const answer = await s.router.dispatch('jobs.cancel', { jobId }).catch((e: ApiError) => e.code);
      expect(['E_BAD_REQUEST', { cancelled: false }], JSON.stringify(jobId)).toContainEqual(answer);
    }
    expect(existsSync(path.join(s.workspace.root, '..', 'escape'))).toBe(false);
    expect(s.jobs.list()).toEqual([]);
  });

  it('optimise.state names no optimisation for a run of another kind, and for an id nothing has', async () => {
    const s = await services();
    const now = new Date().toISOString();
    const dir = s.workspace.resolve(path.join('runs', 'a-train-run'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ schemaVersion: RUN_SCHEMA_VERSION, id: 'a-train-run', kind: 'train', status: 'completed', createdAt: now, finishedAt: now, config: { spec: mlp } }));
    for (const jobId of ['a-train-run', 'nothing-here']) {
      const err = await errorOf(s.router.dispatch('optimise.state', { jobId }));
      expect(err.code).toBe('E_BAD_INPUT');
      expect(err.message).toMatch(/no optimisation with the id/);
    }
    // optimise.resume on them starts no job and leaves none registered.
    const err = await errorOf(s.router.dispatch('optimise.resume', { jobId: 'a-train-run' }));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
  });

  it('optimise.state refuses a run.json or state.json that is a link out of the workspace, a FIFO or huge, at once', async () => {
    const s = await services();
    const outside = tempDir();
    writeFileSync(path.join(outside.dir, 'secret.json'), JSON.stringify({ secret: 'outside-the-workspace' }));
    const runs = s.workspace.resolve('runs');
    mkdirSync(runs, { recursive: true });
    // runs/<id> a link to a folder outside
    mkdirSync(path.join(outside.dir, 'run'), { recursive: true });
    writeFileSync(path.join(outside.dir, 'run', 'run.json'), '{"secret":"outside-the-workspace"}');
    symlinkSync(path.join(outside.dir, 'run'), path.join(runs, 'linked-folder'));
    // run.json a link, a FIFO, a huge file
    mkdirSync(path.join(runs, 'linked-file'));
    symlinkSync(path.join(outside.dir, 'secret.json'), path.join(runs, 'linked-file', 'run.json'));
    mkdirSync(path.join(runs, 'fifo'));
    execFileSync('mkfifo', [path.join(runs, 'fifo', 'run.json')]);
    mkdirSync(path.join(runs, 'huge'));
    writeFileSync(path.join(runs, 'huge', 'run.json'), Buffer.alloc(17 * 1024 * 1024, 0x20));
    // an engine wizard's state.json a FIFO and a link
    mkdirSync(s.workspace.resolve('optimise/state-fifo'), { recursive: true });
    execFileSync('mkfifo', [s.workspace.resolve('optimise/state-fifo/state.json')]);
    mkdirSync(s.workspace.resolve('optimise/state-link'), { recursive: true });
    symlinkSync(path.join(outside.dir, 'secret.json'), s.workspace.resolve('optimise/state-link/state.json'));
    // a script wizard's state.json a FIFO beside a good run.json
    plantScriptWizardRun(s, 'script-state-fifo', outside.dir);
    execFileSync('mkfifo', [s.workspace.resolve('runs/script-state-fifo/state.json')]);

    for (const jobId of ['linked-folder', 'linked-file', 'fifo', 'huge', 'state-fifo', 'state-link', 'script-state-fifo']) {
      const t0 = Date.now();
      const err = await errorOf(s.router.dispatch('optimise.state', { jobId }));
      expect(Date.now() - t0, jobId).toBeLessThan(5000);
      expect(['E_BAD_INPUT', 'E_DATA'], `${jobId}: ${err.code} ${err.message}`).toContain(err.code);
      expect(err.message).not.toContain('outside-the-workspace');
    }
    outside.cleanup();
  });

  it('optimise.state reads a version 1 engine state (optimiseId) as version 2', async () => {
    const s = await services();
    const request = OptimiseRequestSchema.parse({ target: { spec: mlp, data: { kind: 'fashion-mnist' } }, repeat: 2 });
    const { jobId: _j, ...req } = request;
    const v2 = initialState('old-wizard', request);
    const { jobId: _k, ...rest } = v2;
    const v1 = { ...rest, schemaVersion: 1, optimiseId: 'old-wizard', request: { ...req, optimiseId: 'old-wizard' }, status: 'cancelled' };
    mkdirSync(s.workspace.resolve('optimise/old-wizard'), { recursive: true });
    writeFileSync(s.workspace.resolve('optimise/old-wizard/state.json'), JSON.stringify(v1));
    const state = (await s.router.dispatch('optimise.state', { jobId: 'old-wizard' })) as { schemaVersion: number; jobId: string; request: { jobId?: string } };
    expect(state).toMatchObject({ schemaVersion: 2, jobId: 'old-wizard', status: 'cancelled', request: { jobId: 'old-wizard' } });
  });

  it('optimise.resume of a script optimisation runs no command, registers nothing and leaves the id free', async () => {
    const s = await services(true);
    const cwd = tempDir();
    plantScriptWizardRun(s, 'planted-script-wizard', cwd.dir);
    for (let i = 0; i < 2; i++) {
      const err = await errorOf(s.router.dispatch('optimise.resume', { jobId: 'planted-script-wizard' }));
      expect(err.code).toBe('E_FORBIDDEN');
    }
    expect(existsSync(path.join(cwd.dir, 'ran-a-command'))).toBe(false);
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
    // optimise.state still answers its record (null: stopped before its baseline).
    expect(await s.router.dispatch('optimise.state', { jobId: 'planted-script-wizard' })).toBeNull();
    cwd.cleanup();
  });

  it('script targets through the router start nothing without allowScripts, under any id', async () => {
    const s = await services(false);
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd: cwd.dir };
    for (const [method, params] of [
      ['train.run', { target, maxSteps: 1, jobId: 'j1' }],
      ['benchmark.training', { target, steps: 1, repeat: 2, jobId: 'j2' }],
      ['batchSize.search', { target, stepsPerTrial: 1, jobId: 'j3' }],
      ['optimise.start', { target, steps: 1, repeat: 2, jobId: 'j4' }],
      ['optimise.start', { target, steps: 1, repeat: 2, resumeFrom: 'j4' }],
    ] as const) {
      const err = await errorOf(s.router.dispatch(method, params));
      expect(err.code, method).toBe('E_FORBIDDEN');
    }
    expect(existsSync(path.join(cwd.dir, 'ran-a-command'))).toBe(false);
    expect(s.jobs.list()).toEqual([]);
    expect(readdirSync(s.workspace.resolve('runs'))).toEqual([]);
    cwd.cleanup();
  });
});

describe('one id, two jobs', () => {
  it('refuses a second job under a running id (whatever its kind) and leaves the first one listed and cancellable', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'sleep 30'], cwd: cwd.dir };
    const first = s.router.dispatch('train.run', { target, jobId: 'same-id' });
    first.catch(() => undefined);
    await until('the first job to run', () => s.running.has('same-id'));
    for (const [method, params] of [
      ['train.run', { target, jobId: 'same-id' }],
      ['benchmark.training', { target, steps: 1, repeat: 2, jobId: 'same-id' }],
      ['optimise.start', { target: { spec: mlp, data: { kind: 'fashion-mnist' } }, jobId: 'same-id' }],
    ] as const) {
      const err = await errorOf(s.router.dispatch(method, params));
      expect(err.code, method).toBe('E_BAD_INPUT');
      expect(err.message).toMatch(/already running|exists already/);
    }
    expect(s.jobs.list().map((j) => [j.jobId, j.method])).toEqual([['same-id', 'train.run']]);
    expect(await s.router.dispatch('jobs.cancel', { jobId: 'same-id' })).toEqual({ cancelled: true });
    const err = await errorOf(first);
    expect(err.code).toBe('E_CANCELLED');
    expect(s.jobs.list()).toEqual([]);
    expect(s.running.running).toBe(0);
    cwd.cleanup();
  }, 60_000);

  it('names the job that holds a refused id (a script run), not the kind of job that asked for it', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'sleep 30'], cwd: cwd.dir };
    const first = s.router.dispatch('train.run', { target, jobId: 'held-id' });
    first.catch(() => undefined);
    await until('the first job to run', () => s.running.has('held-id'));
    for (const [method, params] of [
      ['benchmark.training', { target, steps: 1, repeat: 2, jobId: 'held-id' }],
      ['optimise.start', { target: { spec: mlp, data: { kind: 'fashion-mnist' } }, jobId: 'held-id' }],
    ] as const) {
      const err = await errorOf(s.router.dispatch(method, params));
      // Today: "script benchmark held-id is already running", "optimisation held-id is already running".
      expect(err.message, method).not.toMatch(/^(script benchmark|benchmark job|optimisation) held-id is already running/);
    }
    await s.cancelJob('held-id');
    await errorOf(first);
    cwd.cleanup();
  }, 60_000);

  it('frees a job id after its job fails, so the id is not refused forever', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'exit 3'], cwd: cwd.dir };
    const e1 = await errorOf(s.router.dispatch('benchmark.training', { target, steps: 1, repeat: 2, jobId: 'reused' }));
    expect(e1.code).toBe('E_SCRIPT');
    const e2 = await errorOf(s.router.dispatch('benchmark.training', { target, steps: 1, repeat: 2, jobId: 'reused' }));
    expect(e2.code).toBe('E_SCRIPT');
    // Engine side: a request refused while its data is prepared frees its id as well.
    for (let i = 0; i < 2; i++) {
      const e = await errorOf(s.router.dispatch('batchSize.search', { spec: mlp, data: { kind: 'dataset', train: 'no-such-cache' }, jobId: 'reused-search' }));
      expect(e.message).not.toMatch(/already running/);
    }
    expect(s.running.running).toBe(0);
    expect(s.jobs.list()).toEqual([]);
    cwd.cleanup();
  }, 60_000);

  it('a script launch cancelled right after its start is killed and recorded cancelled', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'sleep 30; touch survived'], cwd: cwd.dir };
    for (const method of ['train.run', 'benchmark.training', 'batchSize.search', 'optimise.start'] as const) {
      const jobId = `cancel-at-once-${method.replace('.', '-')}`;
      const params = method === 'train.run' ? { target, jobId } : method === 'batchSize.search' ? { target, stepsPerTrial: 1, jobId } : { target, steps: 1, repeat: 2, jobId };
      const p = s.router.dispatch(method, params);
      p.catch(() => undefined);
      const t0 = Date.now();
      expect(await s.router.dispatch('jobs.cancel', { jobId }), method).toEqual({ cancelled: true });
      const err = await errorOf(p);
      expect(err.code, `${method}: ${err.message}`).toBe('E_CANCELLED');
      expect(Date.now() - t0, method).toBeLessThan(20_000);
    }
    expect(existsSync(path.join(cwd.dir, 'survived'))).toBe(false);
    expect(s.running.running).toBe(0);
    cwd.cleanup();
  }, 120_000);
});

describe('a wizard state from the workspace is data', () => {
  it('optimise.resume through the router reads no data outside the workspace that a planted state names', async () => {
    const s = await services();
    const outside = tempDir();
    await plantEngineWizard(s, 'outside-data', 'cancelled', { kind: 'fashion-mnist', dir: outside.dir });
    const err = await errorOf(s.router.dispatch('optimise.resume', { jobId: 'outside-data' }));
    expect(err.message).toMatch(/is outside the workspace/);
    expect(err.code).not.toBe('E_INTERNAL');
    const state = (await s.router.dispatch('optimise.state', { jobId: 'outside-data' })) as { status: string };
    expect(state.status).toBe('failed');
    outside.cleanup();
  }, 60_000);

  it('an engine wizard that fails while its run is being made is saved failed, not left running', async () => {
    const s = await services();
    s.engine.devices = (() => Promise.reject(new ApiError('E_ENGINE_CRASHED', 'the engine host is gone'))) as typeof s.engine.devices;
    const err = await errorOf(s.router.dispatch('optimise.start', { target: { spec: mlp, data: { kind: 'fashion-mnist' } }, repeat: 2, jobId: 'dies-early' }));
    expect(err.code).toBe('E_ENGINE_CRASHED');
    const state = (await s.router.dispatch('optimise.state', { jobId: 'dies-early' })) as { status: string };
    // Today the state says "running" for a wizard nothing runs.
    expect(state.status).toBe('failed');
  }, 60_000);

  it('optimise.start does not overwrite an unreadable state.json under the id it is given', async () => {
    const s = await services();
    mkdirSync(s.workspace.resolve('optimise/corrupt-state'), { recursive: true });
    writeFileSync(s.workspace.resolve('optimise/corrupt-state/state.json'), '{"schemaVersion": 2, "jobId": "corrupt-state", "trials": [');
    const err = await errorOf(s.router.dispatch('optimise.start', { target: { spec: mlp, data: { kind: 'dataset', train: 'no-such-cache' } }, repeat: 2, jobId: 'corrupt-state' }));
    expect(err.message).toMatch(/exists already|cannot be read|does not match/);
    expect(readFileSync(s.workspace.resolve('optimise/corrupt-state/state.json'), 'utf8')).toContain('"trials": [');
  }, 60_000);
});

describe('the two wizards share one id space (optimise.state and optimise.resume look in both)', () => {
  it('an engine optimise.start refuses the id of a script optimisation run, which optimise.state would otherwise stop answering', async () => {
    const s = await services(true);
    const cwd = tempDir();
    plantScriptWizardRun(s, 'shared-wizard-id', cwd.dir);
    expect(await s.router.dispatch('optimise.state', { jobId: 'shared-wizard-id' })).toBeNull();
    const err = await errorOf(
      s.router.dispatch('optimise.start', { target: { spec: mlp, data: { kind: 'dataset', train: 'no-such-cache' } }, repeat: 2, jobId: 'shared-wizard-id' }),
    );
    // The script wizard's record is still what the id answers (today: the new engine wizard's state shadows it).
    expect(await s.router.dispatch('optimise.state', { jobId: 'shared-wizard-id' })).toBeNull();
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toMatch(/exists already/);
    cwd.cleanup();
  }, 60_000);

  it('a script optimise.start refuses the id of an engine wizard, which optimise.state would otherwise keep answering instead', async () => {
    const s = await services(true);
    const cwd = tempDir();
    await plantEngineWizard(s, 'engine-wizard-id');
    const target = { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command; exit 3'], cwd: cwd.dir };
    const err = await errorOf(s.router.dispatch('optimise.start', { target, steps: 1, repeat: 2, jobId: 'engine-wizard-id' }));
    // Today the script wizard runs under runs/engine-wizard-id, and optimise.state/resume of the id keep answering the engine's.
    expect(existsSync(s.workspace.resolve('runs/engine-wizard-id'))).toBe(false);
    expect(existsSync(path.join(cwd.dir, 'ran-a-command'))).toBe(false);
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toMatch(/exists already/);
    cwd.cleanup();
  }, 60_000);
});

describe('cancels that must reach nested work', () => {
  it('jobs.cancel of an engine wizard during its own batch-size search stops the search and saves the wizard cancelled', async () => {
    const s = await services();
    const phases: string[] = [];
    let searchStarted = false;
    const off = s.events.subscribe((event, data) => {
      if (event === 'optimise.progress') phases.push((data as { phase: string }).phase);
      if (event === 'batchSize.progress' && (data as { phase: string }).phase === 'trial') searchStarted = true;
    });
    const wizard = s.router.dispatch('optimise.start', {
      target: { spec: mlp, data: { kind: 'fashion-mnist' }, options: { batchSize: 16, memoryLimitBytes: 2 ** 30, device: 'cpu' } },
      repeat: 2,
      steps: 5,
      warmupSteps: 1,
      maxTrials: 1,
      preset: 'balanced',
      allowRecipeChanges: true,
      jobId: 'nested-search',
    });
    wizard.catch(() => undefined);
    try {
      await until('the batch-size search trial', () => searchStarted, 90_000);
      expect(s.running.has('nested-search')).toBe(true);
      const searchIds = [...((s.running as unknown as { jobs: Map<string, unknown> }).jobs.keys())].filter((id) => id !== 'nested-search');
      expect(searchIds.length).toBe(1);
      expect(await s.router.dispatch('jobs.cancel', { jobId: 'nested-search' })).toEqual({ cancelled: true });
      const err = await errorOf(wizard);
      expect(err.code).toBe('E_CANCELLED');
      const state = (await s.router.dispatch('optimise.state', { jobId: 'nested-search' })) as { status: string; batchSearch: unknown };
      expect(state.status).toBe('cancelled');
      expect(state.batchSearch).toBeNull();
      expect(s.running.running).toBe(0);
      // The search's own run is recorded cancelled, not left running.
      const runs = (await s.router.dispatch('runs.list', {})) as { kind: string; status: string }[];
      expect(runs.filter((r) => r.kind === 'batch-search').map((r) => r.status)).toEqual(['cancelled']);
      expect(phases).toContain('batch-search');
    } finally {
      off();
    }
  }, 180_000);
});

describe('a cancel racing a job\'s start', () => {
  it('jobs.cancel while a batch-size trial is being set up (its memory read) stops the search before the trial trains', async () => {
    const s = await services();
    const mem = s.engine.engineMemory.bind(s.engine);
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    s.engine.engineMemory = (async () => {
      if (!entered) {
        entered = true;
        await gate;
      }
      return mem();
    }) as typeof s.engine.engineMemory;
    const trials: { outcome: string }[] = [];
    const off = s.events.subscribe((event, data) => event === 'batchSize.trial' && trials.push((data as { trial: { outcome: string } }).trial));
    const search = s.router.dispatch('batchSize.search', {
      spec: mlp,
      data: { kind: 'fashion-mnist' },
      options: { batchSize: 8, device: 'cpu', memoryLimitBytes: 64 * 2 ** 20 },
      stepsPerTrial: 20,
      jobId: 'trial-window',
    });
    search.catch(() => undefined);
    try {
      await until('the first trial to be set up', () => entered, 90_000);
      expect(await s.router.dispatch('jobs.cancel', { jobId: 'trial-window' })).toEqual({ cancelled: true });
      release();
      const err = await errorOf(search);
      expect(err.code, err.message).toBe('E_CANCELLED');
      // No trial trained after the cancel was answered.
      expect(trials.filter((t) => t.outcome === 'ok')).toEqual([]);
    } finally {
      release();
      off();
    }
  }, 180_000);

  it('jobs.cancel right after optimise.resume reaches the resumed wizard', async () => {
    const s = await services();
    await plantEngineWizard(s, 'resume-race');
    const resumed = s.router.dispatch('optimise.resume', { jobId: 'resume-race' });
    resumed.catch(() => undefined);
    try {
      // The job is listed (jobs.started) at once: a client's Cancel may come now.
      expect(s.jobs.list().map((j) => j.jobId)).toEqual(['resume-race']);
      const answer = await s.router.dispatch('jobs.cancel', { jobId: 'resume-race' });
      expect(answer).toEqual({ cancelled: true });
      const err = await errorOf(resumed);
      expect(err.code).toBe('E_CANCELLED');
    } finally {
      // A lost cancel leaves the wizard measuring: stop it for good before the workspace goes.
      await until('the wizard to stop', async () => {
        await s.cancelJob('resume-race');
        return s.jobs.list().length === 0;
      }, 60_000).catch(() => undefined);
    }
  }, 120_000);

  it('jobs.cancel between an engine run\'s data preparation and its first step stops the run', async () => {
    const s = await services();
    // Widen the window between the data prepared (checkTraining) and engine.train: the run's record is made there.
    const devices = s.engine.devices.bind(s.engine);
    let checked = false;
    let entered = false;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const origCheck = s.engine.checkTraining.bind(s.engine);
    s.engine.checkTraining = (async (...a: Parameters<typeof origCheck>) => {
      const r = await origCheck(...a);
      checked = true;
      return r;
    }) as typeof s.engine.checkTraining;
    s.engine.devices = (async () => {
      if (checked && !entered) {
        entered = true;
        await gate;
      }
      return devices();
    }) as typeof s.engine.devices;
    const run = s.router.dispatch('train.run', { spec: mlp, data: { kind: 'fashion-mnist' }, options: { epochs: 1, maxSteps: 300, batchSize: 32 }, jobId: 'window-run' });
    run.catch(() => undefined);
    await until('the run to reach its record', () => entered, 60_000);
    expect(await s.router.dispatch('jobs.cancel', { jobId: 'window-run' })).toEqual({ cancelled: true });
    release();
    const outcome = await run.then(
      () => 'completed',
      (e: ApiError) => e.code,
    );
    expect(outcome).toBe('E_CANCELLED');
    const rec = JSON.parse(readFileSync(s.workspace.resolve('runs/window-run/run.json'), 'utf8')) as { status: string };
    expect(rec.status).toBe('cancelled');
  }, 120_000);
});
