import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import type { Workspace } from './workspace';

/** A folder of the workspace, for the import wizard's file chooser (serve mode never browses outside it). */
export async function listFiles(workspace: Workspace, dir: string) {
  const abs = workspace.resolve(dir);
  const names = await fs.readdir(abs).catch((err: Error) => {
    throw new ApiError('E_BAD_INPUT', `cannot list ${dir || 'the workspace'}: ${err.message}`);
  });
  const entries = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const stat = await fs.stat(path.join(abs, name)).catch(() => null);
    if (!stat) continue;
    entries.push({ name, path: path.relative(workspace.root, path.join(abs, name)), kind: stat.isDirectory() ? ('dir' as const) : ('file' as const), bytes: stat.size });
  }
  return { dir: path.relative(workspace.root, abs), entries };
}
