import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { ApiError } from '../api/errors';
import { writeJsonAtomic } from './atomic-write';

export const WORKSPACE_SCHEMA_VERSION = 1;
const WORKSPACE_FILE = 'workspace.json';
const SUBFOLDERS = ['datasets', 'runs', 'reports', 'sources'] as const;

/**
 * `<user-data>/workspace`, where user-data is the folder Electron gives an app
 * named Trainbench, so the CLI, serve mode and the desktop app share one workspace.
 */
export function defaultWorkspaceDir(
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
  home: string = os.homedir(),
): string {
  if (env.TRAINBENCH_WORKSPACE) return path.resolve(env.TRAINBENCH_WORKSPACE);
  const p = platform === 'win32' ? path.win32 : path.posix;
  let userData: string;
  if (platform === 'win32') userData = p.join(env.APPDATA ?? p.join(home, 'AppData', 'Roaming'), 'Trainbench');
  else if (platform === 'darwin') userData = p.join(home, 'Library', 'Application Support', 'Trainbench');
  else userData = p.join(env.XDG_CONFIG_HOME ?? p.join(home, '.config'), 'Trainbench');
  return p.join(userData, 'workspace');
}

export interface Workspace {
  readonly root: string;
  /** Resolves a path relative to the workspace; refuses anything that escapes it. */
  resolve(relative: string): string;
}

export function resolveInside(root: string, relative: string): string {
  if (relative.includes('\0')) throw new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative)} contains a NUL byte`);
  const resolved = path.resolve(root, relative);
  const rel = path.relative(root, resolved);
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) {
    throw new ApiError('E_BAD_INPUT', `path ${JSON.stringify(relative)} is outside the workspace ${root}`);
  }
  return resolved;
}

/** Creates the workspace layout if needed and records its schema version. */
export async function openWorkspace(dir: string): Promise<Workspace> {
  const root = path.resolve(dir);
  try {
    await fs.mkdir(root, { recursive: true });
    for (const sub of SUBFOLDERS) await fs.mkdir(path.join(root, sub), { recursive: true });
  } catch (err) {
    throw new ApiError('E_BAD_INPUT', `cannot use ${root} as a workspace: ${(err as Error).message}`);
  }
  const marker = path.join(root, WORKSPACE_FILE);
  const existing = await fs.readFile(marker, 'utf8').catch(() => null);
  if (existing === null) {
    await writeJsonAtomic(marker, { schemaVersion: WORKSPACE_SCHEMA_VERSION, createdAt: new Date().toISOString() });
  } else {
    let version: unknown;
    try {
      version = (JSON.parse(existing) as { schemaVersion?: unknown }).schemaVersion;
    } catch {
      version = undefined;
    }
    if (typeof version === 'number' && version > WORKSPACE_SCHEMA_VERSION) {
      throw new ApiError(
        'E_DATA',
        `workspace ${root} has schema version ${version}, newer than this Trainbench understands (${WORKSPACE_SCHEMA_VERSION}); update Trainbench`,
      );
    }
  }
  return { root, resolve: (relative) => resolveInside(root, relative) };
}
