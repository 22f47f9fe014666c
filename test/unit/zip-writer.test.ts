// The zip writer's output read back by other people's readers: Info-ZIP's `unzip -t` and
// Python's zipfile, byte for byte; and a reader that stops reading makes the writer give up.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';

import { afterAll, describe, expect, it } from 'vitest';

import { checkEntryName, dosDateTime, ZipWriter } from '../../src-main/core/downloads/zip-writer';
import { tempDir } from '../helpers/temp-dir';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const PY_READ = `
import json, sys, zipfile, base64
z = zipfile.ZipFile(sys.argv[1])
bad = z.testzip()
out = {'bad': bad, 'entries': [{'name': i.filename, 'size': i.file_size, 'method': i.compress_type, 'data': base64.b64encode(z.read(i)).decode()} for i in z.infolist()]}
print(json.dumps(out))
`;

describe('ZipWriter', () => {
  it('writes deflated entries that unzip -t and Python read back byte for byte', async () => {
    const contents: Record<string, Buffer> = {
      'run-1/run.json': Buffer.from(JSON.stringify({ schemaVersion: 1, result: { samplesPerSec: 1234.5 } }, null, 2)),
      'run-1/empty.log': Buffer.alloc(0),
      // Random bytes do not compress: the deflated entry is larger than the file, and still exact.
      'run-1/random.bin': randomBytes(3 * 1024 * 1024 + 17),
      // Repetitive text, several of the source's chunks long.
      'run-1/events.jsonl': Buffer.from('{"type":"train.step","loss":0.25}\n'.repeat(40_000)),
      'run-1/sub/grüße.txt': Buffer.from('UTF-8 names are flagged as such\n'),
    };
    const file = path.join(tmp.dir, 'out.zip');
    const sink = createWriteStream(file);
    const zip = new ZipWriter(sink);
    const when = new Date(2026, 10, 27, 15, 4, 6);
    for (const [name, data] of Object.entries(contents)) {
      // In chunks, as a file stream gives them.
      const chunks = [];
      for (let at = 0; at < data.length; at += 64 * 1024) chunks.push(data.subarray(at, at + 64 * 1024));
      const written = await zip.addFile(name, Readable.from(chunks), when);
      expect(written.bytes).toBe(data.length);
    }
    const total = await zip.finish();
    sink.end();
    await finished(sink);
    expect(readFileSync(file).length).toBe(total);

    const test = execFileSync('unzip', ['-t', file], { encoding: 'utf8' });
    expect(test).toContain('No errors detected');

    const read = JSON.parse(execFileSync('python3', ['-c', PY_READ, file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })) as {
      bad: string | null;
      entries: { name: string; size: number; method: number; data: string }[];
    };
    expect(read.bad).toBeNull();
    expect(read.entries.map((e) => e.name)).toEqual(Object.keys(contents));
    for (const e of read.entries) {
      expect(e.method).toBe(8);
      expect(Buffer.from(e.data, 'base64').equals(contents[e.name])).toBe(true);
    }
    // unzip -l shows the date it was given (local time, 2-second resolution).
    expect(execFileSync('unzip', ['-l', file], { encoding: 'utf8' })).toContain('2026-11-27 15:04');
  });

  it('writes an empty zip that readers accept', async () => {
    const chunks: Buffer[] = [];
    const sink = new Writable({ write: (c: Buffer, _e, cb) => (chunks.push(c), cb()) });
    await new ZipWriter(sink).finish();
    const file = path.join(tmp.dir, 'empty.zip');
    writeFileSync(file, Buffer.concat(chunks));
    expect(Buffer.concat(chunks).length).toBe(22);
    expect(JSON.parse(execFileSync('python3', ['-c', PY_READ, file], { encoding: 'utf8' }))).toEqual({ bad: null, entries: [] });
  });

  it('gives up on a reader that takes nothing, and on a closed one', async () => {
    // A sink that accepts one small buffer and never asks for more.
    const stuck = new Writable({ highWaterMark: 16, write: () => undefined });
    const zip = new ZipWriter(stuck, { stallMs: 200 });
    await expect(zip.addFile('a/big.bin', Readable.from([randomBytes(256 * 1024)]), new Date())).rejects.toThrow(/took nothing for 0.2 s/);

    const closed = new Writable({ write: (_c, _e, cb) => cb() });
    closed.destroy();
    await expect(new ZipWriter(closed).addFile('a/b.txt', Readable.from([Buffer.from('x')]), new Date())).rejects.toThrow(/closed before the zip was written/);
  });

  it('refuses entry names that would unpack outside their folder', () => {
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a\\b', 'a//b', '', './a', 'a/\u0000']) expect(() => checkEntryName(bad), bad).toThrow(/not a zip entry name/);
    expect(() => checkEntryName('0001-report/phase-breakdown.svg')).not.toThrow();
    // Names that unpack reading as others (re-attack 11): a bidi mark, zero-width and tag characters, a line separator.
    for (const bad of ['note\u202etxt.exe', 'zw\u200bx.log', 'a\u2028b.log', 'tag\u{e0001}.log', 'k\u17b4.log']) expect(() => checkEntryName(bad), bad).toThrow(/not a zip entry name/);
    expect(() => checkEntryName('runs/naïve café 日本.log')).not.toThrow();
  });

  it('stores dates as MS-DOS time, clamped to 1980', () => {
    expect(dosDateTime(new Date(2026, 0, 2, 3, 4, 59))).toEqual({ time: (3 << 11) | (4 << 5) | 29, date: (46 << 9) | (1 << 5) | 2 });
    expect(dosDateTime(new Date(1970, 0, 1))).toEqual({ time: 0, date: (1 << 5) | 1 });
  });
});
