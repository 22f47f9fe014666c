// Issue 14: `trainbench train -- <command>`, the CLI face of train.run on a script target.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseRunRecord } from '../../src-main/api/run-record';
import { isScriptTrainRun, TrainRunResultSchema } from '../../src-main/api/train-result';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, runCli, SCRIPTS } from './script-helpers';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());
const TINY = path.join(SCRIPTS, 'tiny_train.py');

describe('trainbench train -- <command>', () => {
  it('trains the command to --max-steps and saves it as a train run with its loss', async () => {
    const { code, stdout, stderr } = await runCli(['train', '--json', '--no-output', '--max-steps', '7', '--warmup-steps', '2', '--workspace', ws.dir, '--cwd', SCRIPTS, '--', PYTHON, TINY, 'plain']);
    expect(code, stderr).toBe(0);
    const r = TrainRunResultSchema.parse(JSON.parse(stdout));
    if (!isScriptTrainRun(r)) throw new Error('not a script run');
    expect(r).toMatchObject({ steps: 7, batchSize: 16, stepTime: { warmupSteps: 2 }, target: { ended: 'maxSteps' } });
    expect(r.target.lastLoss?.step).toBe(7);
    const stored = parseRunRecord(readFileSync(path.join(ws.dir, r.runDir, 'run.json'), 'utf8')).record!;
    expect(stored).toMatchObject({ kind: 'train', status: 'completed' });
  }, 60_000);

  it('prints the run for a person, and the output of the script on stderr', async () => {
    const { code, stdout, stderr } = await runCli(['train', '--workspace', ws.dir, '--', PYTHON, TINY, 'plain']);
    expect(code, stderr).toBe(0);
    expect(stdout).toMatch(/^run {8}.*tiny_train\.py plain$/m);
    expect(stdout).toMatch(/^steps {6}12 optimizer steps$/m);
    expect(stdout).toMatch(/^loss {7}\d[\d.e-]* at step 12$/m);
    expect(stderr).toContain('trained steps=12');
  }, 60_000);

  it('refuses the old train-script command (train takes the command after --) and a bad --max-steps, naming them', async () => {
    const old = await runCli(['train-script', '--workspace', ws.dir, '--', PYTHON, TINY]);
    expect(old.code).toBe(1);
    expect(old.stderr).toContain("unknown command 'train-script'");
    const bad = await runCli(['train', '--max-steps', '0', '--workspace', ws.dir, '--', PYTHON, TINY]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--max-steps');
  }, 30_000);
});
