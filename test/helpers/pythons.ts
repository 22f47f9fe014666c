// The Pythons the script tests run, found once per test run: each lookup imports torch (1.5 to 2.5 s of CPU),
// and some fifty test files ask. test/helpers/python-setup.ts (vitest's globalSetup) finds them before the
// workers start and leaves the answers in the environment, which every worker inherits; a file run outside
// vitest's setup (or a Python not looked up there) asks the interpreter itself, as before.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { REPO_ROOT } from './repo';

const FOUND = 'TB_TEST_PYTHONS';

interface Found {
  python?: string;
  /** torch.__version__ by interpreter path; null where it has no torch. */
  torch: Record<string, string | null>;
}

const found = (): Found => {
  try {
    return JSON.parse(process.env[FOUND] ?? '') as Found;
  } catch {
    return { torch: {} };
  }
};

function askTorch(python: string): string | null {
  try {
    return execFileSync(python, ['-c', 'import torch; print(torch.__version__)'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** The PyTorch an interpreter imports, or null. */
export function torchOf(python: string): string | null {
  const known = found().torch;
  return python in known ? known[python] : askTorch(python);
}

/** The first Python that imports torch: Debian's python3-torch lives in /usr/bin/python3, which a pyenv shim may hide. */
export function firstTorchPython(): string {
  const known = found().python;
  if (known) return known;
  for (const candidate of ['/usr/bin/python3', 'python3']) {
    if (askTorch(candidate) !== null) return candidate;
  }
  throw new Error('no python3 with torch found: install python3-torch (Debian) before these tests');
}

/** The second PyTorch's interpreter: TB_TORCH2_PYTHON, or the virtual environment scripts/ci-torch2.sh makes. */
export const torch2Python = (): string => process.env.TB_TORCH2_PYTHON ?? path.join(REPO_ROOT, '.venv-torch2', 'bin', 'python');

/** Debian's torch 1.13 with Hugging Face's Trainer beside it: TB_TORCH1_CLIENTS_PYTHON, or scripts/ci-torch1-clients.sh's environment. */
export const torch1ClientsPython = (): string => process.env.TB_TORCH1_CLIENTS_PYTHON ?? path.join(REPO_ROOT, '.venv-torch1-clients', 'bin', 'python');

/** Looks every interpreter up once and leaves the answers for the workers (run by the globalSetup). */
export function findPythonsOnce(): void {
  const python = firstTorchPython();
  const torch: Record<string, string | null> = {};
  for (const p of new Set([python, torch2Python()])) torch[p] = askTorch(p);
  process.env[FOUND] = JSON.stringify({ python, torch } satisfies Found);
}
