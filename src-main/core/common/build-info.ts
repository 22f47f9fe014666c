import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

import { packageRoot } from '../../engine/package-root';

export interface BuildInfo {
  /** package.json's version. */
  version: string;
  /** The commit the code was built from: a kit's TRAINBENCH_COMMIT, else the checkout's HEAD (development, CI); null in a packaged app. */
  commit: string | null;
}

let cached: BuildInfo | null = null;

/** Which Trainbench measured something: recorded in every run, quoted by reports. */
export function buildInfo(): BuildInfo {
  if (!cached) {
    let root = '';
    let version = 'unknown';
    try {
      root = packageRoot();
      version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      // a damaged install: the version says so
    }
    cached = { version, commit: commitOf(root) };
  }
  return cached;
}

/**
 * The commit the code was built from: TRAINBENCH_COMMIT where a kit says so (tools/device/run.sh: the copy on
 * a lent GPU machine carries a .git older than its files), else the checkout's HEAD; null outside a checkout.
 */
export function commitOf(root: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const stamped = env.TRAINBENCH_COMMIT?.trim();
  if (stamped && /^[0-9a-f]{40}$/.test(stamped)) return stamped;
  return root ? gitCommit(root) : null;
}

const read = (file: string): string | null => {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
};

/** HEAD's commit, read from the files (no git process): a worktree's .git file and packed refs included. */
export function gitCommit(root: string): string | null {
  const dotGit = path.join(root, '.git');
  let gitDir = dotGit;
  try {
    if (statSync(dotGit).isFile()) gitDir = path.resolve(root, (read(dotGit) ?? '').replace(/^gitdir:\s*/, ''));
  } catch {
    return null;
  }
  const head = read(path.join(gitDir, 'HEAD'));
  if (!head) return null;
  if (/^[0-9a-f]{40}$/.test(head)) return head;
  const ref = /^ref:\s*(\S+)$/.exec(head)?.[1];
  if (!ref) return null;
  const common = read(path.join(gitDir, 'commondir'));
  const dirs = common ? [gitDir, path.resolve(gitDir, common)] : [gitDir];
  for (const dir of dirs) {
    const loose = read(path.join(dir, ref));
    if (loose && /^[0-9a-f]{40}$/.test(loose)) return loose;
    const packed = read(path.join(dir, 'packed-refs'));
    const line = packed?.split('\n').find((l) => l.endsWith(` ${ref}`));
    if (line) return line.slice(0, 40);
  }
  return null;
}
