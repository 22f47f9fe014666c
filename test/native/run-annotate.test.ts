// runs.annotate through the real services' router: a run's name, tags and notes go to
// runs/<id>/notes.json (never run.json), within caps on write and on read, and neither a
// tampered file nor a link planted in the run's folder reaches outside the workspace.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { RUN_NAME_MAX_CHARS, RUN_NOTES_MAX_BYTES, RUN_NOTES_MAX_CHARS, RUN_TAGS_MAX } from '../../src-main/api/run-notes';
import { RUN_SCHEMA_VERSION } from '../../src-main/api/run-record';
import type { RunSummary } from '../../src-main/api/training';
import type { Services } from '../../src-main/core/services';
import { testServices } from '../helpers/services';
import { tempDir } from '../helpers/temp-dir';

let services: Services;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ services, cleanup } = await testServices());
});
afterAll(async () => cleanup());

const inWs = (...parts: string[]) => path.join(services.workspace.root, ...parts);
const call = (method: string, params: unknown) => services.router.dispatch(method, params);
/** The error a call fails with, as the router throws it. */
async function failure(method: string, params: unknown): Promise<ApiError> {
  const err = await call(method, params).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}
const listed = async (id: string) => ((await call('runs.list', {})) as RunSummary[]).find((r) => r.id === id);

function writeRun(id: string): string {
  mkdirSync(inWs('runs', id), { recursive: true });
  const text = JSON.stringify({
    schemaVersion: RUN_SCHEMA_VERSION, id, kind: 'train', status: 'completed', createdAt: '2026-11-27T10:00:00.000Z', config: { spec: { family: 'mlp' } },
  });
  writeFileSync(inWs('runs', id, 'run.json'), text);
  return text;
}

describe('runs.annotate', () => {
  it('stores name, tags and notes beside run.json, which stays as the run wrote it, and keeps the fields a call leaves out', async () => {
    const runJson = writeRun('20261127-100000-aaaaaa');
    const stored = await call('runs.annotate', { id: '20261127-100000-aaaaaa', name: '  baseline  ', tags: ['fast', 'amp'], notes: 'first try\nbatch 64' });
    expect(stored).toMatchObject({ name: 'baseline', tags: ['fast', 'amp'], notes: 'first try\nbatch 64' });
    await call('runs.annotate', { id: '20261127-100000-aaaaaa', tags: ['slow'] });
    const summary = await listed('20261127-100000-aaaaaa');
    expect(summary?.annotation).toMatchObject({ name: 'baseline', tags: ['slow'], notes: 'first try\nbatch 64' });
    expect(summary?.annotationProblem).toBeUndefined();
    expect(summary?.target).toBe('engine');
    expect(JSON.parse(readFileSync(inWs('runs', '20261127-100000-aaaaaa', 'notes.json'), 'utf8'))).toMatchObject({ schemaVersion: 1, name: 'baseline', tags: ['slow'] });
    expect(readFileSync(inWs('runs', '20261127-100000-aaaaaa', 'run.json'), 'utf8')).toBe(runJson);
    // A run never annotated has no annotation, and no problem.
    writeRun('20261127-100000-bbbbbb');
    expect(await listed('20261127-100000-bbbbbb')).not.toHaveProperty('annotation');
  });

  it('applies two edits of one run made at once one after the other: neither field is lost', async () => {
    writeRun('20261127-100000-cccccc');
    await Promise.all([
      call('runs.annotate', { id: '20261127-100000-cccccc', name: 'both' }),
      call('runs.annotate', { id: '20261127-100000-cccccc', notes: 'kept' }),
      call('runs.annotate', { id: '20261127-100000-cccccc', tags: ['x'] }),
    ]);
    expect((await listed('20261127-100000-cccccc'))?.annotation).toMatchObject({ name: 'both', notes: 'kept', tags: ['x'] });
  });

  it('refuses what is over the caps or malformed, naming the field, and writes nothing', async () => {
    const id = '20261127-100000-dddddd';
    writeRun(id);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ name: 'n'.repeat(RUN_NAME_MAX_CHARS + 1) }, /name.*at most 120 characters/],
      [{ name: 'two\nlines' }, /name.*one line/],
      [{ tags: Array.from({ length: RUN_TAGS_MAX + 1 }, (_, i) => `t${i}`) }, /at most 12 tags/],
      [{ tags: ['a,b'] }, /no commas/],
      [{ tags: ['same', 'same'] }, /each tag once/],
      [{ tags: ['  '] }, /not empty/],
      [{ notes: 'x'.repeat(RUN_NOTES_MAX_CHARS + 1) }, /notes.*at most 4000 characters/],
      [{ notes: 'bell\u0007' }, /no control characters/],
      // A right-to-left override makes "run-A\u202Egnp.exe" read as another name: refused, named.
      [{ name: 'baseline \u202Eenilesab' }, /name has no bidirectional formatting marks/],
      [{ tags: ['amp\u2067'] }, /tag has no bidirectional formatting marks/],
      [{ notes: 'see \u202Dthis' }, /notes have no bidirectional formatting marks/],
      // U+2028/U+2029 are no \p{Cc} but break a line as a newline does: refused in each field, the characters named.
      [{ name: 'base\u2028line' }, /name has no line or paragraph separators \(U\+2028, U\+2029\)/],
      [{ name: 'base\u2029line' }, /name has no line or paragraph separators \(U\+2028, U\+2029\)/],
      [{ tags: ['fa\u2028st'] }, /tag has no line or paragraph separators \(U\+2028, U\+2029\)/],
      [{ tags: ['a\u2029mp'] }, /tag has no line or paragraph separators \(U\+2028, U\+2029\)/],
      [{ notes: 'first\u2028second' }, /notes have no line or paragraph separators \(U\+2028, U\+2029\)/],
      [{ notes: 'first\nsecond\u2029third' }, /notes have no line or paragraph separators \(U\+2028, U\+2029\)/],
      // Re-attack 12: blanks (U+2800), marks alone or invisible characters show as an empty pill or nothing.
      [{ name: '\u2800\u2800\u2800' }, /a run's name has something to see: not only blanks, combining marks or invisible characters/],
      [{ name: '\u030d'.repeat(8) }, /a run's name has something to see/],
      [{ tags: ['\u2800\u2800\u2800'] }, /a tag has something to see/],
      [{ tags: ['ok', '\u3164'] }, /a tag has something to see/],
      [{}, /give a name, tags or notes/],
      [{ name: 'x', runJson: { status: 'failed' } }, /runJson/],
    ];
    for (const [fields, message] of cases) {
      const err = await failure('runs.annotate', { id, ...fields });
      expect(err.code).toBe('E_BAD_REQUEST');
      expect(err.message).toMatch(message);
    }
    expect(await listed(id)).not.toHaveProperty('annotation');
  });

  it('says there is no such run, and refuses ids that would leave runs/', async () => {
    const missing = await failure('runs.annotate', { id: '20261127-100000-ffffff', name: 'x' });
    expect(missing.code).toBe('E_BAD_INPUT');
    expect(missing.message).toMatch(/^there is no run 20261127-100000-ffffff in the workspace/);
    for (const id of ['../outside', '..', 'runs/x', '/etc']) expect((await failure('runs.annotate', { id, name: 'x' })).code).toBe('E_BAD_REQUEST');
  });

  it('a run folder that is a link to a folder outside is refused, saying so: nothing is written there', async () => {
    const outside = tempDir();
    try {
      mkdirSync(inWs('runs'), { recursive: true });
      symlinkSync(outside.dir, inWs('runs', '20261127-100000-linked'));
      const err = await failure('runs.annotate', { id: '20261127-100000-linked', name: 'x' });
      // The runs list shows it as unreadable: annotating says why, not that there is no such run.
      expect(err.code).toBe('E_DATA');
      expect(err.message).toMatch(/^run 20261127-100000-linked cannot be read: path "runs\/20261127-100000-linked" leads outside the workspace through a link/);
      expect(() => readFileSync(path.join(outside.dir, 'notes.json'))).toThrow();
    } finally {
      outside.cleanup();
    }
  });

  it('a notes.json planted as a link to a file outside is not read, and annotating replaces the link, never writing through it', async () => {
    const outside = tempDir();
    try {
      const id = '20261127-100000-eeeeee';
      writeRun(id);
      const secret = path.join(outside.dir, 'secret.json');
      writeFileSync(secret, JSON.stringify({ schemaVersion: 1, name: 'secret', tags: [], notes: '', updatedAt: '2026-11-27T10:00:00.000Z' }));
      symlinkSync(secret, inWs('runs', id, 'notes.json'));
      const summary = await listed(id);
      expect(summary).not.toHaveProperty('annotation');
      expect(summary?.annotationProblem).toMatch(/notes\.json" leads outside the workspace through a link/);
      await call('runs.annotate', { id, name: 'mine' });
      expect(JSON.parse(readFileSync(secret, 'utf8')).name).toBe('secret');
      expect((await listed(id))?.annotation?.name).toBe('mine');
    } finally {
      outside.cleanup();
    }
  });

  it('a notes.json that is a folder (with a file in it) is the file’s problem, named, not an internal error: nothing in the folder changes', async () => {
    const id = '20261127-100000-ffffff';
    writeRun(id);
    mkdirSync(inWs('runs', id, 'notes.json'));
    writeFileSync(inWs('runs', id, 'notes.json', 'kept.txt'), 'mine');
    expect((await listed(id))?.annotationProblem).toMatch(/notes\.json/);
    const err = await failure('runs.annotate', { id, name: 'mine' });
    expect(err.code).toBe('E_DATA');
    expect(err.message).toMatch(new RegExp(`runs/${id}/notes\\.json"? is a folder, not a file`));
    expect(readFileSync(inWs('runs', id, 'notes.json', 'kept.txt'), 'utf8')).toBe('mine');
  });

  it('a tampered notes.json (over the caps, too large, not JSON) is reported and skipped, the run still listed; annotating replaces it', async () => {
    const tampered: [string, string, RegExp][] = [
      ['20261127-100000-t00001', JSON.stringify({ schemaVersion: 1, name: 'n'.repeat(10_000), tags: [], notes: '', updatedAt: '2026-11-27T10:00:00.000Z' }), /does not match its schema: .*name/],
      ['20261127-100000-t00002', JSON.stringify({ schemaVersion: 1, name: 'x', tags: ['a'], notes: 'y'.repeat(RUN_NOTES_MAX_BYTES) }), /more than the 65536 bytes this reads/],
      ['20261127-100000-t00003', '{ "name": ', /notes\.json is/],
      ['20261127-100000-t00004', JSON.stringify({ schemaVersion: 1, name: 'x', tags: 'not a list', notes: '', updatedAt: 'yesterday' }), /does not match its schema/],
      ['20261127-100000-t00005', JSON.stringify({ schemaVersion: 1, name: 'fast\u202Ewols', tags: [], notes: '', updatedAt: '2026-11-27T10:00:00.000Z' }), /does not match its schema: .*bidirectional/],
      ['20261127-100000-t00006', JSON.stringify({ schemaVersion: 1, name: 'fast\u2028slow', tags: [], notes: '', updatedAt: '2026-11-27T10:00:00.000Z' }), /does not match its schema: .*U\+2028/],
      ['20261127-100000-t00007', JSON.stringify({ schemaVersion: 1, name: 'x', tags: ['a\u2029b'], notes: '', updatedAt: '2026-11-27T10:00:00.000Z' }), /does not match its schema: .*U\+2029/],
      ['20261127-100000-t00008', JSON.stringify({ schemaVersion: 1, name: 'x', tags: [], notes: 'one\u2028two', updatedAt: '2026-11-27T10:00:00.000Z' }), /does not match its schema: .*line or paragraph separators/],
    ];
    for (const [id, text, problem] of tampered) {
      writeRun(id);
      writeFileSync(inWs('runs', id, 'notes.json'), text);
      const summary = await listed(id);
      expect(summary?.status).toBe('completed');
      expect(summary).not.toHaveProperty('annotation');
      expect(summary?.annotationProblem).toMatch(problem);
      expect(await call('runs.annotate', { id, tags: ['fixed'] })).toMatchObject({ name: '', tags: ['fixed'], notes: '' });
      expect((await listed(id))?.annotationProblem).toBeUndefined();
    }
  });
});

describe('trainbench runs', () => {
  it('shows a run by its name, with its title and tags', async () => {
    const { formatRuns } = await import('../../src-main/cli/runs-command');
    writeRun('20261127-100000-c1c1c1');
    await call('runs.annotate', { id: '20261127-100000-c1c1c1', name: 'baseline', tags: ['fast', 'amp'] });
    const text = formatRuns([(await listed('20261127-100000-c1c1c1'))!]);
    expect(text).toBe('20261127-100000-c1c1c1  completed  baseline (mlp on data) [fast, amp]');
  });
});
