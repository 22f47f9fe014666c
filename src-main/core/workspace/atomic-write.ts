import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';

/** Codes Windows gives a rename whose target another process (a reader, an antivirus, the indexer) holds open for a moment. */
const TRANSIENT_WINDOWS_RENAME = new Set(['EPERM', 'EACCES', 'EBUSY']);
const RETRY_DELAYS_MS = [10, 20, 50, 100, 200, 300, 400];

/**
 * fs.rename that, on Windows, waits out a target held open by another process
 * for about a second before giving up; elsewhere a rename replaces an open file.
 */
export async function renameReplacing(
  from: string,
  to: string,
  platform: NodeJS.Platform = process.platform,
  rename: (a: string, b: string) => Promise<void> = fs.rename,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rename(from, to);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (platform !== 'win32' || !TRANSIENT_WINDOWS_RENAME.has(code) || attempt >= RETRY_DELAYS_MS.length) throw err;
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAYS_MS[attempt]));
    }
  }
}

/** Where an atomic write creates its temp file and renames it: a folder (held open, in the workspace) or a plain path. */
export interface WriteFolder {
  /** The path to create or rename an entry of the folder by. */
  entry(name: string): string;
  /** Right before the rename: throws when the folder (or the temp file in it) is no longer the one written into. */
  verify(made?: { name: string; dev: bigint; ino: bigint }): void;
}

/** A folder by its name only, for files outside the workspace the person chose. */
export function folderByName(dir: string): WriteFolder {
  return { entry: (name) => path.join(dir, name), verify: () => undefined };
}

/**
 * A fresh temp file beside `name` in `folder` holding `data` (O_EXCL: never through a link or over a file someone
 * placed there), checked to be still in the folder written into; its path, for the rename or link that makes it
 * visible. Removed again when it cannot be written or checked.
 */
export async function writeTempIn(folder: WriteFolder, name: string, data: string | Uint8Array): Promise<string> {
  const tmpName = `.${name}.${randomBytes(6).toString('hex')}.tmp`;
  const tmp = folder.entry(tmpName);
  try {
    const handle = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), 0o644);
    let made: { name: string; dev: bigint; ino: bigint };
    try {
      await handle.writeFile(data);
      const st = await handle.stat({ bigint: true });
      made = { name: tmpName, dev: st.dev, ino: st.ino };
    } finally {
      await handle.close();
    }
    folder.verify(made);
    return tmp;
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/**
 * Writes a file by temp file + rename, so readers never see half a file. The temp file is
 * created fresh (O_EXCL, so never through a link or over a file someone placed there), and
 * the rename replaces whatever the name was, a link included, without writing through it.
 * Both go through `folder`, so a confined write stays in the folder it checked (issue 41, F3).
 */
export async function writeFileAtomicIn(folder: WriteFolder, name: string, data: string | Uint8Array): Promise<void> {
  const tmp = await writeTempIn(folder, name, data);
  try {
    await renameReplacing(tmp, folder.entry(name));
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

export function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  return writeFileAtomicIn(folderByName(path.dirname(file)), path.basename(file), data);
}

export function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  return writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
}
