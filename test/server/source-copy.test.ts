// The desktop app's way to add data files to sources/ (issue 41 item 1), without Electron: the shell's
// own methods as the IPC handler answers them, with the dialog's choice given, copying through the
// same function serve mode's upload uses. Progress, Cancel (no partial file), and the refusals.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { SourceUploadProgress } from '../../src-main/api/source-uploads';
import { openWorkspace, type Workspace } from '../../src-main/core/workspace/workspace';
import { copyChosenFiles, sourceShell } from '../../src-main/electron/source-copy';
import { tempDir } from '../helpers/temp-dir';

const MiB = 1024 * 1024;
const root = tempDir();
const home = tempDir();
let workspace: Workspace;
const sources = () => readdirSync(path.join(root.dir, 'sources')).sort();

beforeAll(async () => {
  workspace = await openWorkspace(root.dir);
  writeFileSync(path.join(home.dir, 'iris.csv'), 'sepal,species\n5.1,setosa\n');
  writeFileSync(path.join(home.dir, 'big.npy'), Buffer.alloc(24 * MiB, 7));
  writeFileSync(path.join(home.dir, 'labels.npy'), Buffer.alloc(3 * MiB, 1));
  mkdirSync(path.join(home.dir, 'a folder'));
  execFileSync('mkfifo', [path.join(home.dir, 'pipe.csv')]);
  writeFileSync(path.join(home.dir, '.hidden.csv'), 'x\n');
});

afterAll(() => {
  root.cleanup();
  home.cleanup();
});

describe('the desktop app: chosen files copied into sources/', () => {
  it('copies each chosen file whole, reporting progress over all of them', async () => {
    const shell = sourceShell({ workspace });
    const events: SourceUploadProgress[] = [];
    const window = { chooseFiles: async () => [path.join(home.dir, 'iris.csv'), path.join(home.dir, 'labels.npy')], send: (_: string, data: unknown) => events.push(data as SourceUploadProgress) };
    const answer = await shell('sources.addChosenFiles', { uploadId: 'u1' }, window);
    expect(answer).toEqual({
      added: [
        { name: 'iris.csv', path: 'sources/iris.csv', bytes: 25 },
        { name: 'labels.npy', path: 'sources/labels.npy', bytes: 3 * MiB },
      ],
    });
    expect(readFileSync(path.join(root.dir, 'sources', 'iris.csv'), 'utf8')).toBe('sepal,species\n5.1,setosa\n');
    expect(events.every((e) => e.uploadId === 'u1' && e.totalBytes === 25 + 3 * MiB)).toBe(true);
    expect(events.at(-1)).toMatchObject({ file: 'labels.npy', fileIndex: 2, files: 2, sentBytes: 25 + 3 * MiB });
    expect(sources()).toEqual(['iris.csv', 'labels.npy']);
  });

  it('answers an empty list when the dialog was closed', async () => {
    const shell = sourceShell({ workspace });
    expect(await shell('sources.addChosenFiles', { uploadId: 'u2' }, { chooseFiles: async () => [], send: () => undefined })).toEqual({ added: [] });
  });

  it('stops on Cancel, leaving no partial file', async () => {
    const shell = sourceShell({ workspace });
    let cancelled: unknown;
    const window = {
      chooseFiles: async () => [path.join(home.dir, 'big.npy')],
      send: (_: string, data: unknown) => {
        // Cancel from the page once a part has arrived.
        if ((data as SourceUploadProgress).sentBytes > 0 && cancelled === undefined) cancelled = shell('sources.cancelAdd', { uploadId: 'u3' }, window);
      },
    };
    await expect(shell('sources.addChosenFiles', { uploadId: 'u3' }, window)).rejects.toMatchObject({ code: 'E_CANCELLED', message: 'cancelled: big.npy was not added to sources/' });
    expect(await cancelled).toEqual({ cancelled: true });
    expect(sources()).toEqual(['iris.csv', 'labels.npy']);
  });

  it('refuses over the limit, a taken name, a hidden name, a folder and a FIFO, naming each, before copying any', async () => {
    const refusals: [string[], number | undefined, string][] = [
      [[path.join(home.dir, 'big.npy')], 16 * MiB, 'big.npy is 24 MiB, more than the 16 MiB a file added to sources/ may be: not saved'],
      [[path.join(home.dir, 'iris.csv')], undefined, 'sources/iris.csv exists already: rename the file you add, or remove the one in sources/ first'],
      [[path.join(home.dir, '.hidden.csv')], undefined, 'file name ".hidden.csv" starts with a dot (a hidden file): rename the file'],
      [[path.join(home.dir, 'a folder')], undefined, 'a folder is not a regular file: choose data files'],
      [[path.join(home.dir, 'pipe.csv')], undefined, 'pipe.csv is not a regular file: choose data files'],
      [[path.join(home.dir, 'labels.npy'), path.join(home.dir, 'pipe.csv')], undefined, 'pipe.csv is not a regular file'],
    ];
    for (const [files, maxBytes, message] of refusals) {
      await expect(copyChosenFiles(workspace, files, { maxBytes }), message).rejects.toThrow(message);
    }
    expect(sources()).toEqual(['iris.csv', 'labels.npy']);
  });

  it('refuses to copy through a sources/ that is a link', async () => {
    const other = tempDir();
    const away = tempDir();
    try {
      symlinkSync(away.dir, path.join(other.dir, 'sources'));
      const linked = await openWorkspace(other.dir);
      await expect(copyChosenFiles(linked, [path.join(home.dir, 'iris.csv')])).rejects.toThrow('leads outside the workspace through a link');
      expect(readdirSync(away.dir)).toEqual([]);
    } finally {
      other.cleanup();
      away.cleanup();
    }
  });

  it('checks its params as the router checks the contract', async () => {
    const shell = sourceShell({ workspace });
    await expect(shell('sources.addChosenFiles', { uploadId: '../x' }, { chooseFiles: async () => [], send: () => undefined })).rejects.toMatchObject({ code: 'E_BAD_REQUEST' });
    expect(await shell('sources.cancelAdd', { uploadId: 'nothing-running' }, { chooseFiles: async () => [], send: () => undefined })).toEqual({ cancelled: false });
  });
});
