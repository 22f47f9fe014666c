import path from 'node:path';

import { ApiError } from '../../api/errors';
import { quotedText } from '../../api/shell-word';
import type { Workspace } from './workspace';
import { isFolder, listFolderBounded } from './workspace-files';

/** Entries the chooser is sent: a page lists them all, and more than this nobody scrolls through. */
export const FILES_LIST_KEEP = 2_000;

/**
 * A folder of the workspace, for the import wizard's file chooser. Serve mode never
 * browses outside it, and shows only what can be imported: files and folders as
 * themselves (links and special files are left out, as they would be refused).
 */
export async function listFiles(workspace: Workspace, dir: string) {
  const abs = workspace.resolve(dir);
  if (!(await isFolder(workspace, abs))) throw new ApiError('E_BAD_INPUT', `cannot list ${dir ? quotedText(dir) : 'the workspace'}: it is not a folder of the workspace`);
  const { entries: found, omitted, omittedAtLeast } = await listFolderBounded(workspace, abs, { keep: FILES_LIST_KEEP });
  const entries = found
    .filter((e) => !e.name.startsWith('.') && (e.kind === 'dir' || e.kind === 'file'))
    .map((e) => ({ name: e.name, path: path.relative(workspace.root, path.join(abs, e.name)), kind: e.kind as 'dir' | 'file', bytes: e.bytes }));
  return { dir: path.relative(workspace.root, abs), entries, omitted, omittedAtLeast };
}
