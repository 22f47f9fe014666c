import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { REPO_ROOT } from './repo';
import { tempDir } from './temp-dir';

export const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'nvidia-smi');

/** A folder holding an executable `nvidia-smi` that replays a fixture (put it first on PATH). */
export function fakeNvidiaSmi(fixture: string, env: { periods?: number; exitCode?: number } = {}) {
  const t = tempDir('fake-smi-');
  const pids = path.join(t.dir, 'pids');
  const log = path.join(t.dir, 'log');
  const script = path.join(t.dir, 'nvidia-smi');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      `export FAKE_NVIDIA_SMI_FIXTURE='${path.join(FIXTURES, fixture)}'`,
      `export FAKE_NVIDIA_SMI_PIDS='${pids}'`,
      `export FAKE_NVIDIA_SMI_LOG='${log}'`,
      env.periods !== undefined ? `export FAKE_NVIDIA_SMI_PERIODS=${env.periods}` : '',
      env.exitCode !== undefined ? `export FAKE_NVIDIA_SMI_EXIT=${env.exitCode}` : '',
      `exec '${process.execPath}' '${path.join(FIXTURES, 'fake-nvidia-smi.mjs')}' "$@"`,
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  return { dir: t.dir, command: script, pids, log, cleanup: t.cleanup };
}
