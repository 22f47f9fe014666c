// Runs a Python command with Trainbench's probe injected, as the launcher does (PYTHONPATH, TB_PROBE_*),
// and records what each process sent: every line checked against the probe's message schema (the
// contract Trainbench parses), kept whole so fields the schema does not name yet can be read too.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { ProbeHelloSchema, ProbeMessageSchema } from '../../src-main/core/script/probe-messages';
import type { ProbeHello } from '../../src-main/core/script/probe-messages';
import { torch2Python, torchOf } from '../helpers/pythons';
import { REPO_ROOT } from '../helpers/repo';
import { PYTHON, SCRIPTS } from './script-helpers';

/** The probe under test: this checkout's, or another copy (TB_TEST_PROBE_DIR), e.g. an older commit's to see a test fail. */
export const PROBE_DIR = process.env.TB_TEST_PROBE_DIR ? path.resolve(process.env.TB_TEST_PROBE_DIR) : path.join(REPO_ROOT, 'resources', 'python');

export interface Interpreter {
  /** Names the PyTorch it has, for test titles. */
  label: string;
  python: string | null;
  torch: string | null;
  /** Why it is absent (python null). */
  why: string;
}

/** Debian's python3-torch (1.13): the tests' first PyTorch. */
export const TORCH1: Interpreter = { label: `torch ${torchOf(PYTHON) ?? '?'} (${PYTHON})`, python: PYTHON, torch: torchOf(PYTHON), why: '' };

/**
 * The second PyTorch: TB_TORCH2_PYTHON, or the virtual environment scripts/ci-torch2.sh makes (.venv-torch2).
 * Absent, its tests skip and say why; TB_REQUIRE_TORCH2=1 (CI) makes absence a failure.
 */
export const TORCH2: Interpreter = (() => {
  const python = torch2Python();
  const torch = existsSync(python) ? torchOf(python) : null;
  if (torch?.startsWith('2.')) return { label: `torch ${torch} (${python})`, python, torch, why: '' };
  const why = torch ? `${python} has torch ${torch}, not 2.x` : `${python} has no torch: run scripts/ci-torch2.sh (or set TB_TORCH2_PYTHON)`;
  if (process.env.TB_REQUIRE_TORCH2 === '1') throw new Error(`TB_REQUIRE_TORCH2=1 but ${why}`);
  console.warn(`probe tests on torch 2.x skip: ${why}`);
  return { label: 'torch 2.x (absent)', python: null, torch: null, why };
})();

export const INTERPRETERS: Interpreter[] = [TORCH1, TORCH2];

/** A venv's console scripts (accelerate, torchrun) sit beside its python. */
export const binOf = (python: string, name: string) => path.join(path.dirname(python), name);

export interface ProbeProcess {
  hello: ProbeHello;
  /** Every message after the hello, as sent (checked against the schema, extra fields kept). */
  messages: Record<string, unknown>[];
}

export interface ProbedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  processes: ProbeProcess[];
  /** Lines that are not valid probe messages: always 0 from a correct probe. */
  invalid: string[];
}

export interface ProbedOptions {
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  /** Run without the probe (the same command, for a comparison). */
  noProbe?: boolean;
}

/** Runs argv[0] with argv[1..] under the probe and resolves when it has exited and its connections closed. */
export async function runProbed(argv: string[], options: ProbedOptions = {}): Promise<ProbedRun> {
  const processes: ProbeProcess[] = [];
  const invalid: string[] = [];
  const closed: Promise<void>[] = [];
  const token = 'probe-test-token';
  const server = net.createServer((socket) => {
    let process: ProbeProcess | null = null;
    let buffered = '';
    closed.push(new Promise((resolve) => socket.on('close', () => resolve())));
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let raw: unknown;
        try {
          raw = JSON.parse(line);
        } catch {
          invalid.push(line);
          continue;
        }
        if (process === null) {
          const hello = ProbeHelloSchema.safeParse(raw);
          if (!hello.success || hello.data.token !== token) invalid.push(line);
          else processes.push((process = { hello: hello.data, messages: [] }));
          continue;
        }
        if (ProbeMessageSchema.safeParse(raw).success) process.messages.push(raw as Record<string, unknown>);
        else invalid.push(line);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;
  const env: Record<string, string> = { ...(process.env as Record<string, string>), ...(options.env ?? {}) };
  if (!options.noProbe) {
    env.PYTHONPATH = [PROBE_DIR, options.env?.PYTHONPATH].filter(Boolean).join(path.delimiter);
    env.TB_PROBE_ADDR = `127.0.0.1:${port}`;
    env.TB_PROBE_TOKEN = token;
  }
  const child = spawn(argv[0], argv.slice(1), { cwd: options.cwd ?? SCRIPTS, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(timer);
  await Promise.race([Promise.all(closed), new Promise((resolve) => setTimeout(resolve, 2000))]);
  server.close();
  return { code, stdout, stderr, processes, invalid };
}

export interface Step {
  step: number;
  durMs: number;
  samples: number;
  batches: number;
  dataMs: number;
  phasesMs: Record<'forward' | 'loss' | 'backward' | 'optimizer', number>;
  optimizerSteps?: number;
  skipped?: boolean;
  evalMs?: number;
}

export const stepsOf = (p: ProbeProcess) => p.messages.filter((m) => m.type === 'step') as unknown as Step[];
export const doneOf = (p: ProbeProcess) => p.messages.find((m) => m.type === 'done') as { steps: number; reason: string } | undefined;
export const kindOf = (p: ProbeProcess, type: string) => p.messages.filter((m) => m.type === type) as Record<string, unknown>[];

/** Step -> loss, from the probe's loss batches. */
export function lossesOf(p: ProbeProcess): Map<number, number | null> {
  const out = new Map<number, number | null>();
  for (const m of p.messages.filter((x) => x.type === 'loss') as unknown as { steps: number[]; values: (number | null)[] }[]) m.steps.forEach((s, i) => out.set(s, m.values[i]));
  return out;
}

/** Everything the steps' phases and data wait add up to, against the steps' own time. */
export function accounted(steps: Step[]) {
  const parts = steps.reduce((a, s) => a + s.dataMs + Object.values(s.phasesMs).reduce((x, y) => x + y, 0), 0);
  const total = steps.reduce((a, s) => a + s.durMs, 0);
  return { parts, total };
}

/** The JSON a fixture printed after `prefix` (its own count of what it did). */
export function fixtureReport<T = Record<string, unknown>>(stdout: string, prefix = 'FIXTURE '): T {
  const line = stdout.split('\n').find((l) => l.startsWith(prefix));
  if (!line) throw new Error(`the script printed no "${prefix}" line; its output:\n${stdout.slice(-3000)}`);
  return JSON.parse(line.slice(prefix.length)) as T;
}
