// Issue 41, F1: `check --against <run>` shows the saved command, cwd and env for the person to read before
// --yes. A planted run.json with ESC, CR and OSC bytes in them once redrew the terminal as a harmless command
// while --yes would run another: every printer shows control characters escaped, and the words quoted as a
// shell reads them back. `runs` (the run's title) likewise.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir('planted-command-');
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

/** Any C0 control but the newline that ends a line, C1 control or DEL. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const ID = '20260101-000000-planted';
// What the terminal would show: "python3 train.py"; what runs: the evil script.
const command = ['python3', 'evil.py\x1b[2K\rpython3', 'train.py\x1b]0;ok\x07'];
const cwd = '/tmp/x\r\x1b[2K/home/me/project';
const env = { NOTE: 'fine\x1b[1A\x1b[2K\u009b2K' };

async function trainbench(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(() => {
  mkdirSync(path.join(ws.dir, 'runs', ID), { recursive: true });
  const record = {
    schemaVersion: 2,
    id: ID,
    kind: 'benchmark',
    status: 'completed',
    createdAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    config: { target: { kind: 'script', command, cwd, env }, repeat: 1, warmupSteps: 1, steps: 2 },
    result: { title: `python3 evil.py\x1b[2K\rpython3 train.py`, repetitions: [{ samplesPerSec: 100 }] },
  };
  writeFileSync(path.join(ws.dir, 'runs', ID, 'run.json'), JSON.stringify(record));
});

describe('a command planted in a run file', () => {
  it('check --against shows its command, cwd and env escaped before --yes, and runs nothing', async () => {
    const r = await trainbench('check', '--against', ID, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('pass --yes to run it');
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    // Each planted byte is there to read, escaped where it was.
    // (\u001b while check-service words the command through commandText's JSON quoting; \x1b through shellWord.)
    expect(r.stderr).toMatch(/evil\.py\\(x1b|u001b)\[2K\\rpython3/);
    expect(r.stderr).toContain('train.py\\x1b]0;ok\\x07');
    expect(r.stderr).toContain('/tmp/x\\r\\x1b[2K/home/me/project');
    expect(r.stderr).toMatch(/NOTE=(\$')?fine\\x1b\[1A\\x1b\[2K\\u009b2K/);
  });

  it('runs lists the run under its command, escaped', async () => {
    const r = await trainbench('runs', '--workspace', ws.dir);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('training benchmark: script python3 evil.py\\x1b[2K\\rpython3 train.py\\x1b]0;ok\\x07');
  });

  it('runs --json keeps the title escaped for every client (the UI and reports read the same answer)', async () => {
    const r = await trainbench('runs', '--json', '--workspace', ws.dir);
    const [summary] = JSON.parse(r.stdout) as { title: string }[];
    expect(summary.title).not.toMatch(RAW_CONTROL);
    expect(summary.title).toContain('evil.py\\x1b[2K\\rpython3');
  });
});

describe('names planted in the workspace (the re-attack: a run folder, a model file, a dataset folder)', () => {
  const names = { run: '9evil\x1b]0;x\x07\x1b[31mred', model: 'a\x1b[31mb.json', dataset: 'x\x1b]0;pw\x07y' };
  beforeAll(() => {
    mkdirSync(path.join(ws.dir, 'runs', names.run), { recursive: true });
    writeFileSync(path.join(ws.dir, 'runs', names.run, 'run.json'), '{}');
    mkdirSync(path.join(ws.dir, 'models'), { recursive: true });
    writeFileSync(path.join(ws.dir, 'models', names.model), JSON.stringify({ family: 'mlp\x1b]0;pwned\x07\x1b[2K\r' }));
    mkdirSync(path.join(ws.dir, 'datasets', names.dataset), { recursive: true });
  });

  it('runs, models and cache list show each escaped, as one that cannot be opened', async () => {
    const runs = await trainbench('runs', '--workspace', ws.dir);
    expect(runs.stdout + runs.stderr).not.toMatch(RAW_CONTROL);
    expect(runs.stdout).toContain('9evil\\x1b]0;x\\x07\\x1b[31mred');
    const models = await trainbench('models', '--workspace', ws.dir);
    expect(models.stdout + models.stderr).not.toMatch(RAW_CONTROL);
    expect(models.stdout).toContain('a\\x1b[31mb.json');
    const caches = await trainbench('cache', 'list', '--workspace', ws.dir);
    expect(caches.stdout + caches.stderr).not.toMatch(RAW_CONTROL);
    expect(caches.stdout).toContain('x\\x1b]0;pw\\x07y');
  });
});
