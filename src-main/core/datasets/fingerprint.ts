import { createHash } from 'node:crypto';

import type { RecordSource } from './importers/record-source';
import { openSourceFile } from './importers/source-file';

const EDGE_BYTES = 1 << 20;

export interface FileFingerprint {
  path: string;
  bytes: number;
  mtimeMs: number;
  /** SHA-256 of the first and last MiB: catches content changes that keep size and time. */
  edges: string;
}

async function fileFingerprint(path: string): Promise<FileFingerprint> {
  const fh = await openSourceFile(path);
  try {
    const stat = await fh.stat();
    const hash = createHash('sha256');
    const head = Buffer.alloc(Math.min(EDGE_BYTES, stat.size));
    await fh.read(head, 0, head.length, 0);
    hash.update(head);
    if (stat.size > EDGE_BYTES) {
      const tail = Buffer.alloc(Math.min(EDGE_BYTES, stat.size - EDGE_BYTES));
      await fh.read(tail, 0, tail.length, stat.size - tail.length);
      hash.update(tail);
    }
    return { path, bytes: stat.size, mtimeMs: stat.mtimeMs, edges: hash.digest('hex') };
  } finally {
    await fh.close();
  }
}

/** Identity of a source plus the build settings: the same fingerprint means the same cache. */
export async function fingerprint(source: RecordSource, settings: unknown): Promise<{ hash: string; files: FileFingerprint[] }> {
  const files = await Promise.all(source.files.map(fileFingerprint));
  const basis = JSON.stringify({ kind: source.kind, options: source.options, files, settings, cacheFormat: 1 });
  return { hash: createHash('sha256').update(basis).digest('hex'), files };
}
