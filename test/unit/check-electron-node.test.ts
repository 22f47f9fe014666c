// Node versions: the CLI's range (package.json engines) and the newer one
// Electron's tooling needs, checked before `npm run dist:app` builds anything.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { beforeAll, describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';

const run = promisify(execFile);
const SCRIPT = path.join(REPO_ROOT, 'scripts', 'check-electron-node.mjs');
const readJson = (...p: string[]) => JSON.parse(readFileSync(path.join(REPO_ROOT, ...p), 'utf8'));

let satisfiesRange: (version: string, range: string) => boolean | null;
beforeAll(async () => {
  ({ satisfiesRange } = (await import(SCRIPT)) as { satisfiesRange: typeof satisfiesRange });
});

describe('satisfiesRange', () => {
  it('reads the >= and ^ alternatives npm engines use', () => {
    const cli = '^20.19.0 || >=22.12.0';
    expect(satisfiesRange('v20.19.0', cli)).toBe(true);
    expect(satisfiesRange('v20.18.3', cli)).toBe(false);
    expect(satisfiesRange('v21.7.0', cli)).toBe(false);
    expect(satisfiesRange('v22.11.0', cli)).toBe(false);
    expect(satisfiesRange('v22.12.0', cli)).toBe(true);
    expect(satisfiesRange('v24.1.0', cli)).toBe(true);
    expect(satisfiesRange('v22.12.0', '>= 22.12.0')).toBe(true);
    expect(satisfiesRange('v20.20.2', '>= 22.12.0')).toBe(false);
  });

  it('says it cannot tell for other range forms', () => {
    expect(satisfiesRange('v22.0.0', '~22.1.0')).toBeNull();
  });
});

describe('the Node versions the project states', () => {
  it('the CLI range in package.json admits the Node running these tests', () => {
    expect(satisfiesRange(process.version, readJson('package.json').engines.node)).toBe(true);
  });

  it('dist:app refuses a Node older than the installed electron asks for, naming both', async () => {
    const range = readJson('node_modules', 'electron', 'package.json').engines.node as string;
    const ok = satisfiesRange(process.version, range);
    const result = await run(process.execPath, [SCRIPT]).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    if (ok) {
      expect(result.code).toBe(0);
    } else {
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`Building the desktop app needs Node ${range}`);
      expect(result.stderr).toContain(`this is Node ${process.version}`);
    }
    expect(readJson('package.json').scripts['dist:app']).toMatch(/^node scripts\/check-electron-node\.mjs && /);
  });
});
