import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { buildInfo, commitOf, gitCommit } from '../../src-main/core/common/build-info';
import { createRun } from '../../src-main/core/workspace/run-store';
import { openWorkspace } from '../../src-main/core/workspace/workspace';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(path.join(os.tmpdir(), 'tb-build-info-'));
  dirs.push(d);
  return d;
}
function write(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('commitOf', () => {
  it("takes a kit's stamped commit over the checkout's HEAD, and ignores one that is no commit", () => {
    const root = tmp();
    write(path.join(root, '.git/HEAD'), `${A}\n`);
    expect(commitOf(root, {})).toBe(A);
    expect(commitOf(root, { TRAINBENCH_COMMIT: `${B}\n` })).toBe(B);
    expect(commitOf(root, { TRAINBENCH_COMMIT: 'main' })).toBe(A);
    expect(commitOf('', { TRAINBENCH_COMMIT: 'x' })).toBeNull();
  });
});

describe('gitCommit reads HEAD without running git', () => {
  it('a branch ref as a loose file', () => {
    const root = tmp();
    write(path.join(root, '.git/HEAD'), 'ref: refs/heads/main\n');
    write(path.join(root, '.git/refs/heads/main'), `${A}\n`);
    expect(gitCommit(root)).toBe(A);
  });

  it('a branch ref only in packed-refs, and a detached HEAD', () => {
    const root = tmp();
    write(path.join(root, '.git/HEAD'), 'ref: refs/heads/main\n');
    write(path.join(root, '.git/packed-refs'), `# pack-refs with: peeled fully-peeled sorted\n${B} refs/heads/other\n${A} refs/heads/main\n`);
    expect(gitCommit(root)).toBe(A);
    write(path.join(root, '.git/HEAD'), `${B}\n`);
    expect(gitCommit(root)).toBe(B);
  });

  it('a worktree: .git is a file naming its git dir, refs live in the common dir', () => {
    const root = tmp();
    const main = path.join(root, 'main/.git');
    write(path.join(main, 'refs/heads/feature'), `${B}\n`);
    write(path.join(main, 'worktrees/wt/HEAD'), 'ref: refs/heads/feature\n');
    write(path.join(main, 'worktrees/wt/commondir'), '../..\n');
    write(path.join(root, 'wt/.git'), `gitdir: ${path.join(main, 'worktrees/wt')}\n`);
    expect(gitCommit(path.join(root, 'wt'))).toBe(B);
  });

  it('no checkout, or a ref that does not resolve: null, never a guess', () => {
    const root = tmp();
    expect(gitCommit(root)).toBeNull();
    write(path.join(root, '.git/HEAD'), 'ref: refs/heads/gone\n');
    expect(gitCommit(root)).toBeNull();
    write(path.join(root, '.git/HEAD'), 'garbage\n');
    expect(gitCommit(root)).toBeNull();
  });
});

it('every run records which Trainbench measured it', async () => {
  const ws = await openWorkspace(tmp());
  const run = await createRun(ws, 'train', {});
  await run.finish('completed', {});
  const record = readFileSync(path.join(run.dir, 'run.json'), 'utf8');
  const env = (JSON.parse(record) as { environment: { trainbench: string; trainbenchCommit?: string } }).environment;
  expect(env.trainbench).toMatch(/^\d+\.\d+\.\d+/);
  expect(env.trainbench).toBe(buildInfo().version);
  // This test runs from a git checkout (CI clones one), so the commit is known and is 40 hex digits.
  expect(env.trainbenchCommit).toMatch(/^[0-9a-f]{40}$/);
});
