import { promises as fs } from 'node:fs';
import path from 'node:path';

import { ApiError } from '../api/errors';
import type { Workspace } from './workspace';

/** The entry's path if it stays inside the workspace; null for a link that leads outside. */
function confined(workspace: Workspace, relative: string): string | null {
  try {
    return workspace.resolve(relative);
  } catch (err) {
    if ((err as ApiError).code === 'E_BAD_INPUT') return null;
    throw err;
  }
}

/**
 * A folder of the workspace, for the import wizard's file chooser. Serve mode never
 * browses outside it: links that lead outside are left out, as they could not be imported.
 */
export async function listFiles(workspace: Workspace, dir: string) {
  const abs = workspace.resolve(dir);
  const names = await fs.readdir(abs).catch((err: Error) => {
    throw new ApiError('E_BAD_INPUT', `cannot list ${dir || 'the workspace'}: ${err.message}`);
  });
  const entries = [];
  for (const name of names.sort()) {
    if (name.startsWith('.')) continue;
    const rel = path.relative(workspace.root, path.join(abs, name));
    const entry = confined(workspace, rel);
    if (entry === null) continue;
    const stat = await fs.stat(entry).catch(() => null);
    if (!stat) continue;
    entries.push({ name, path: rel, kind: stat.isDirectory() ? ('dir' as const) : ('file' as const), bytes: stat.size });
  }
  return { dir: path.relative(workspace.root, abs), entries };
}
