// Issue 14: the optimisation wizard on a script target is a script job. Cancelling it (jobs.cancel,
// the CLI's Ctrl-C) kills the launch in flight with its process group, and its run is recorded
// cancelled with the baseline and the trials it had finished; the script's output goes out live.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import type { OptimiseProgress } from '../../src-main/api/optimise';
import type { ScriptOptimiseBaselineEvent } from '../../src-main/api/script-target';
import type { ScriptOutputEvent } from '../../src-main/api/script-target';
import { ScriptOptimiseRequestSchema } from '../../src-main/api/script-target';
import { scriptWizard, scriptWizardRecord } from '../helpers/target-detail';
import type { Services } from '../../src-main/core/services';
import { createServices } from '../../src-main/core/services';
import { readScriptWizardState } from '../../src-main/core/targets/wizard-state';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { newMark, processesWithMark, PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
afterAll(() => ws.cleanup());

const LOGGED = path.join(SCRIPTS, 'slow_items_logged.py');

function request(jobId: string, mark: string) {
  return ScriptOptimiseRequestSchema.parse({
    target: { kind: 'script', command: [PYTHON, LOGGED], cwd: SCRIPTS, env: { TB_TEST_MARK: mark } },
    repeat: 2,
    steps: 4,
    warmupSteps: 1,
    maxTrials: 3,
    timeoutSeconds: 60,
    jobId,
  });
}

/** The run.json of the run whose folder the error message names. */
function runJson(message: string): { status: string; result: unknown; error: { code: string } } {
  const dir = /runs\/([\w-]+)/.exec(message)?.[1];
  expect(dir, message).toBeDefined();
  expect(readdirSync(path.join(ws.dir, 'runs'))).toContain(dir);
  return JSON.parse(readFileSync(path.join(ws.dir, 'runs', dir!, 'run.json'), 'utf8')) as { status: string; result: unknown; error: { code: string } };
}

/** The services of the workspace, as the app has them (scripts allowed), disposed after `use`. */
async function withServices<T>(use: (services: Services) => Promise<T>): Promise<T> {
  const services = await createServices({ workspaceDir: ws.dir, allowScripts: true });
  try {
    return await use(services);
  } finally {
    await services.dispose();
  }
}

describe('the script wizard (optimise.start on a script target) as a job', () => {
  it('cancelled during a trial: the launch is killed, no process is left, the run is cancelled and keeps its finished trial', async () => {
    await withServices(async (services) => {
      const mark = newMark();
      const output: ScriptOutputEvent[] = [];
      const progress: OptimiseProgress[] = [];
      const baselines: ScriptOptimiseBaselineEvent[] = [];
      // The baseline is 2 launches and trial 1 is 4 (A/B/A/B): launch 7 is trial 2's first, cancelled once it has printed.
      let cancelledWhileRunning: boolean | null = null;
      const off = services.events.subscribe((name, data) => {
        if (name === 'optimise.progress') progress.push(data as OptimiseProgress);
        if (name === 'script.optimiseBaseline') baselines.push(data as ScriptOptimiseBaselineEvent);
        if (name !== 'script.output') return;
        const e = data as ScriptOutputEvent;
        output.push(e);
        if (e.repetition !== 7 || cancelledWhileRunning !== null) return;
        const alive = processesWithMark(mark).length > 0; // looked at before the kill, which may be immediate
        cancelledWhileRunning = services.running.has('wizard-cancel') && alive;
        void services.running.cancel('wizard-cancel');
      });
      const t0 = Date.now();
      const err = await services.optimise.start(request('wizard-cancel', mark)).catch((e: unknown) => e);
      off();
      expect(err).toBeInstanceOf(ApiError);
      const e = err as ApiError;
      expect(e.code, e.message).toBe('E_CANCELLED');
      expect(e.message).toMatch(
        /^the script optimisation was cancelled after 1 finished trial; its run runs\/([\w-]+) keeps what it measured \(the script was cancelled after \d+ step\(s\); its process group was killed\); go on with Resume in the Optimise area, or trainbench optimise --resume \1$/,
      );
      expect(cancelledWhileRunning).toBe(true);
      expect(Date.now() - t0).toBeLessThan(90_000);
      expect(processesWithMark(mark)).toEqual([]);
      expect(services.running.running).toBe(0);

      const run = runJson(e.message);
      expect(run.status).toBe('cancelled');
      expect(run.error.code).toBe('E_CANCELLED');
      const kept = scriptWizardRecord(run.result);
      expect(kept.final).toBeNull();
      expect(kept.baseline?.repetitions).toHaveLength(2);
      expect(kept.target.loader).toMatchObject({ num_workers: 0, batch_size: 32 });
      expect(kept.trials).toHaveLength(1);
      expect(kept.trials[0]).toMatchObject({ index: 1, change: { knob: 'dataloader.num_workers', from: 0, to: 2 } });
      expect(kept.trials[0].candidateSamplesPerSec).toHaveLength(2);
      expect(kept.title).toBe(`${PYTHON} ${LOGGED}`);

      // The output of every launch, tagged with the job, the run and the launch; the trial's B side ran with 2 workers.
      expect(output.every((o) => o.jobId === 'wizard-cancel' && o.runId === kept.runId)).toBe(true);
      expect([...new Set(output.map((o) => o.repetition))]).toEqual([1, 2, 3, 4, 5, 6, 7]);
      const firstLine = (launch: number) => output.find((o) => o.repetition === launch)?.line;
      expect(firstLine(1)).toBe('loader num_workers=0 batch_size=32');
      expect(firstLine(4)).toBe('loader num_workers=2 batch_size=32');
      // Progress names the wizard by its job id, so a window that chose the id follows its own wizard.
      expect(progress.length).toBeGreaterThan(0);
      expect(progress.every((p) => p.jobId === 'wizard-cancel' && p.runId === kept.runId)).toBe(true);
      expect(progress.find((p) => p.finishedTrial)?.finishedTrial?.index).toBe(1);
      // The baseline is announced before its first launch, when nothing is measured to estimate from (issue 41 item 7).
      expect(progress[0]).toMatchObject({ phase: 'baseline', repetition: 0, etaSeconds: null });
      // An ETA as the engine wizard gives (core/optimise/eta.ts), from the first finished launch on; it was always null here.
      expect(progress.slice(1).every((p) => p.etaSeconds !== null && p.etaSeconds >= 0)).toBe(true);
      expect(progress.find((p) => p.phase === 'trial')!.etaSeconds).toBeGreaterThan(0);
      // The baseline went out once, when measured, as the run keeps it.
      expect(baselines).toEqual([{ jobId: 'wizard-cancel', runId: kept.runId, baseline: { ...kept.baseline, overrides: kept.target.baseline.overrides }, loader: kept.target.loader, trials: [] }]);

      // Resumed: no baseline measured again, trial 1 kept as it was, trial 2 measured afresh, then the final check.
      const resumedProgress: OptimiseProgress[] = [];
      const restored: ScriptOptimiseBaselineEvent[] = [];
      const offRestored = services.events.subscribe((name, data) => name === 'script.optimiseBaseline' && restored.push(data as ScriptOptimiseBaselineEvent));
      const result = await services.optimise.start({ ...request('wizard-resumed', mark), maxTrials: 2, resumeFrom: kept.runId }, {
        onProgress: (p) => resumedProgress.push(p),
      });
      offRestored();
      expect(result.runId).not.toBe(kept.runId);
      expect(resumedProgress.some((p) => p.phase === 'baseline')).toBe(false);
      expect(result.baseline).toEqual(kept.baseline);
      expect(result.trials).toHaveLength(2);
      expect(result.trials[0]).toEqual(kept.trials[0]);
      expect(result.trials[1].index).toBe(2);
      // A window following the resumed wizard gets its starting point at once: the baseline and the kept trial.
      expect(restored).toEqual([{ jobId: 'wizard-resumed', runId: result.runId, baseline: { ...kept.baseline, overrides: kept.target.baseline.overrides }, loader: kept.target.loader, trials: kept.trials }]);
      expect(result.trials[1].change.knob).not.toBe(kept.trials[0].change.knob);
      expect(result.target.final!.overrides).toEqual(Object.fromEntries(result.trials.filter((t) => t.kept).map((t) => [t.change.knob, t.change.to])));
      expect(processesWithMark(mark)).toEqual([]);
      // A completed wizard has nothing left to resume.
      const again = await services.optimise.start({ ...request('wizard-again', mark), resumeFrom: result.runId }).catch((x: unknown) => x);
      expect((again as ApiError).message).toBe(`script optimisation ${result.runId} completed: there is nothing left to resume`);
    });
  }, 180_000);

  it('cancelled between two launches: the next one never starts, and the run keeps what it had (no baseline yet)', async () => {
    await withServices(async (services) => {
      const mark = newMark();
      let launches = 0;
      const err = await services.optimise
        .start(request('wizard-between', mark), {
          onOutput: (_stream, _line, launch) => (launches = Math.max(launches, launch)),
          // Progress comes after a launch ended and before the next starts.
          onProgress: (p) => {
            if (p.phase === 'baseline' && p.repetition === 1) void services.running.cancel('wizard-between');
          },
        })
        .catch((x: unknown) => x);
      expect((err as ApiError).code).toBe('E_CANCELLED');
      expect((err as ApiError).message).toContain('cancelled after 0 finished trials');
      expect((err as ApiError).message).toContain('cancelled before launch 2');
      expect(launches).toBe(1);
      const run = runJson((err as ApiError).message);
      expect(run.status).toBe('cancelled');
      const kept = scriptWizardRecord(run.result);
      expect(kept.baseline).toBeNull();
      expect(kept.trials).toEqual([]);
      expect(processesWithMark(mark)).toEqual([]);
      expect(await services.cancelJob('wizard-between')).toEqual({ cancelled: false });
    });
  }, 60_000);

  it('a script that crashes in its baseline: the error as it was, and a failed run that keeps what it had', async () => {
    await withServices(async (services) => {
      const crashing = request('wizard-crash', newMark());
      crashing.target = { ...crashing.target, command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py'), 'crash'] };
      const err = await services.optimise.start(crashing).catch((x: unknown) => x);
      expect((err as ApiError).code).toBe('E_SCRIPT');
      expect((err as ApiError).message).toMatch(/^the script exited with code 1 after 3 optimizer step\(s\); its last lines:\n[\s\S]*the model exploded at step 3/);
      const runs = readdirSync(path.join(ws.dir, 'runs')).map((id) => JSON.parse(readFileSync(path.join(ws.dir, 'runs', id, 'run.json'), 'utf8')) as { status: string; result: unknown; config: { jobId: string } });
      const failed = runs.find((r) => r.config.jobId === 'wizard-crash')!;
      expect(failed.status).toBe('failed');
      expect(scriptWizardRecord(failed.result)).toMatchObject({ baseline: null, trials: [], final: null });
    });
  }, 60_000);

  it('refuses to resume another command, naming both, and records no run', async () => {
    await withServices(async (services) => {
      const mark = newMark();
      const err = await services.optimise
        .start(request('wizard-short', mark), {
          onProgress: (p) => {
            if (p.phase === 'baseline' && p.repetition === 1) void services.running.cancel('wizard-short');
          },
        })
        .catch((x: unknown) => x);
      const runId = /runs\/([\w-]+)/.exec((err as ApiError).message)![1];
      const before = readdirSync(path.join(ws.dir, 'runs')).length;
      const other = request('wizard-other', mark);
      other.target = { ...other.target, command: [PYTHON, path.join(SCRIPTS, 'tiny_train.py')] };
      const refused = await services.optimise.start({ ...other, resumeFrom: runId }).catch((x: unknown) => x);
      expect((refused as ApiError).code).toBe('E_BAD_INPUT');
      // Stopped before its baseline: its saved state is the run's result (no baseline), and the command is compared all the same.
      expect((refused as ApiError).message).toBe(`script optimisation ${runId} measured another command (${PYTHON} ${LOGGED} in ${SCRIPTS}): resume it with its own target`);
      expect(readdirSync(path.join(ws.dir, 'runs')).length).toBe(before);
      const missing = await services.optimise.start({ ...other, resumeFrom: 'no-such-run' }).catch((x: unknown) => x);
      expect((missing as ApiError).message).toMatch(/^there is no run no-such-run in the workspace /);
      // A relative working directory, refused as the other script jobs refuse it (second re-attack of issue 41: the
      // wizard ran it in the server's own folder).
      const relative = request('wizard-relative', mark);
      relative.target = { ...relative.target, cwd: 'scripts' };
      const unrooted = await services.optimise.start(relative).catch((x: unknown) => x);
      expect(unrooted).toMatchObject({ code: 'E_BAD_INPUT', message: 'the script\'s working directory must be an absolute path, got "scripts"' });
      expect(readdirSync(path.join(ws.dir, 'runs')).length).toBe(before);
    });
  }, 60_000);

  it('refuses a jobId that is already running, naming it, and records no run', async () => {
    await withServices(async (services) => {
      const held = services.running.open('wizard-taken', 'script optimisation');
      const before = readdirSync(path.join(ws.dir, 'runs')).length;
      const err = await services.optimise.start(request('wizard-taken', newMark())).catch((x: unknown) => x);
      expect((err as ApiError).code).toBe('E_BAD_INPUT');
      expect((err as ApiError).message).toBe('script optimisation wizard-taken is already running: choose another jobId');
      expect(readdirSync(path.join(ws.dir, 'runs')).length).toBe(before);
      services.running.close(held);
    });
  });
});

describe('trainbench optimise -- <script>: Ctrl-C', () => {
  it('cancels the wizard as jobs.cancel does: the launch is killed, the run is cancelled with its finished trial', async () => {
    requireBuilt();
    const mark = newMark();
    const cli = tempDir();
    const args = ['optimise', '--repeat', '2', '--steps', '4', '--warmup-steps', '1', '--max-trials', '3', '--workspace', cli.dir, '--env', `TB_TEST_MARK=${mark}`, '--', PYTHON, LOGGED];
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    // Trial 1 has finished and the next launch runs: Ctrl-C now (to the CLI only: the script has a process group of its own).
    const t0 = Date.now();
    while (!(/^trial 1: /m.test(stderr) && processesWithMark(mark).length > 0)) {
      if (Date.now() - t0 > 90_000) throw new Error(`no second trial's launch seen; stderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGINT');
    const code = await closed;
    expect(code).toBe(1);
    expect(stderr).toContain('cancelling the script optimisation...');
    expect(stderr).toMatch(/trainbench: the script optimisation was cancelled after 1 finished trial; its run runs\/[\w-]+ keeps what it measured/);
    expect(processesWithMark(mark)).toEqual([]);
    const [id] = readdirSync(path.join(cli.dir, 'runs'));
    const run = JSON.parse(readFileSync(path.join(cli.dir, 'runs', id, 'run.json'), 'utf8')) as { status: string; result: unknown };
    expect(run.status).toBe('cancelled');
    expect(scriptWizardRecord(run.result).trials).toHaveLength(1);
    cli.cleanup();
  }, 120_000);

  it('killed outright: --resume goes on from the state saved after its last finished trial', async () => {
    requireBuilt();
    const mark = newMark();
    const cli = tempDir();
    const args = ['optimise', '--repeat', '2', '--steps', '4', '--warmup-steps', '1', '--max-trials', '2', '--workspace', cli.dir, '--env', `TB_TEST_MARK=${mark}`, '--', PYTHON, LOGGED];
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    const t0 = Date.now();
    while (!/^trial 1: /m.test(stderr)) {
      if (Date.now() - t0 > 90_000) throw new Error(`trial 1 never finished; stderr:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    child.kill('SIGKILL');
    await closed;
    // The launch it had started is bounded by the probe's step count: it ends by itself.
    for (let i = 0; i < 300 && processesWithMark(mark).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(processesWithMark(mark)).toEqual([]);
    const [killed] = readdirSync(path.join(cli.dir, 'runs'));
    const state = scriptWizardRecord(JSON.parse(readFileSync(path.join(cli.dir, 'runs', killed, 'state.json'), 'utf8')));
    expect(state.trials).toHaveLength(1);
    // What optimise.state answers for it (run.json has no result: the process was killed).
    expect(await readScriptWizardState(await openWorkspace(cli.dir), killed)).toEqual(state);

    // The command comes from the run's file (the workspace may come from another rig): shown, escaped, and run only with --yes.
    const unconfirmed = await runCli(['optimise', '--resume', killed, '--json', '--workspace', cli.dir], 60_000);
    expect(unconfirmed.code).toBe(1);
    expect(unconfirmed.stderr).toContain(`${killed} is a script optimisation, which goes on by running its command again: the run's file names the settings {`);
    const fingerprint = new RegExp(`the settings \\{.*"resumeFrom":"${killed}".*\\}, the environment TB_TEST_MARK=${mark}, the folder .* and the command ${PYTHON} [^\\n]*\\.\\n  It runs ${PYTHON} [^\\n]*; pass --yes ([0-9a-f]{32}) to run exactly this`).exec(unconfirmed.stderr)?.[1];
    expect(fingerprint, unconfirmed.stderr).toBeDefined();
    // Refused, it never says it resumed.
    expect(unconfirmed.stderr).not.toContain('resumed from its saved state');
    expect(processesWithMark(mark)).toEqual([]);
    expect(stderr).toContain(`continue it with: trainbench optimise --resume ${killed}, which shows the command and the --yes that runs it)`);
    // The fingerprint covers the settings the saved state goes on with, as well as the command.
    expect(unconfirmed.stderr).toContain('"goesOnWith":{"overrides":{');
    // Its state file edited after the reading: other settings (refused under the old fingerprint), or keys that
    // are not Trainbench's (refused whatever the fingerprint); nothing runs either way (re-attack 11).
    const stateFile = path.join(cli.dir, 'runs', killed, 'state.json');
    const original = readFileSync(stateFile, 'utf8');
    const withBaseline = (overrides: Record<string, unknown>) => {
      const edited = JSON.parse(original) as { target: { baseline: { overrides: Record<string, unknown> } } };
      edited.target.baseline.overrides = overrides;
      writeFileSync(stateFile, JSON.stringify(edited));
    };
    withBaseline({ 'dataloader.num_workers': 3 });
    const moved = await runCli(['optimise', '--resume', killed, '--yes', fingerprint!, '--json', '--workspace', cli.dir], 60_000);
    expect(moved.code).toBe(1);
    expect(moved.stderr).toContain(`--yes ${fingerprint} was given for another command`);
    expect(moved.stderr).toContain('"dataloader.num_workers":3');
    withBaseline({ 'dataloader.num_workers': 1000, 'evil.key': 1 });
    const foreign = await runCli(['optimise', '--resume', killed, '--yes', fingerprint!, '--json', '--workspace', cli.dir], 60_000);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toContain(`trainbench: the saved state of script optimisation ${killed} (runs/${killed}/state.json) goes on with settings Trainbench does not take`);
    expect(foreign.stderr).toContain('unknown override "evil.key"');
    expect(processesWithMark(mark)).toEqual([]);
    writeFileSync(stateFile, original);
    const resumed = await runCli(['optimise', '--resume', killed, '--yes', fingerprint!, '--json', '--workspace', cli.dir], 120_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`optimisation ${killed} resumed from its saved state (if stopped, continue it with: trainbench optimise --resume ${killed}, which shows the command and the --yes that runs it)`);
    const r = scriptWizard(JSON.parse(resumed.stdout));
    expect(r.baseline).toEqual(state.baseline);
    expect(r.trials).toHaveLength(2);
    expect(r.trials[0]).toEqual(state.trials[0]);
    expect(r.target.command.env).toEqual({ TB_TEST_MARK: mark });
    expect(processesWithMark(mark)).toEqual([]);

    const both = await runCli(['optimise', '--resume', killed, '--workspace', cli.dir, '--', PYTHON, LOGGED]);
    expect(both.code).toBe(1);
    expect(both.stderr).toContain(`give either a command after '--' or --resume ${killed}`);
    cli.cleanup();
  }, 180_000);
});
