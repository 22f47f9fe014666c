import { randomBytes } from 'node:crypto';
import { createWriteStream, promises as fs, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { ApiErrorPayload } from '../api/errors';
import { writeJsonAtomic } from './atomic-write';
import type { Workspace } from './workspace';

export const RUN_SCHEMA_VERSION = 1;

export type RunStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/** One run's folder: run.json (rewritten atomically) and events.jsonl (appended). */
export interface RunRecord {
  id: string;
  /** Absolute path of runs/<id>. */
  dir: string;
  /** Path relative to the workspace, for results people read. */
  relativeDir: string;
  appendEvent(event: unknown): void;
  finish(status: Exclude<RunStatus, 'running'>, outcome: { result?: unknown; error?: ApiErrorPayload }): Promise<void>;
}

/** Sortable by time, unique without coordination: 20261121-134502-3f9a1c. */
export function newRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

function environment() {
  return {
    platform: process.platform,
    arch: process.arch,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    hostname: os.hostname(),
  };
}

export async function createRun(workspace: Workspace, kind: string, config: unknown): Promise<RunRecord> {
  const id = newRunId();
  const relativeDir = path.join('runs', id);
  const dir = workspace.resolve(relativeDir);
  await fs.mkdir(dir, { recursive: true });
  const base = { schemaVersion: RUN_SCHEMA_VERSION, id, kind, createdAt: new Date().toISOString(), config, environment: environment() };
  await writeJsonAtomic(path.join(dir, 'run.json'), { ...base, status: 'running' });
  const events: WriteStream = createWriteStream(path.join(dir, 'events.jsonl'), { flags: 'a' });
  return {
    id,
    dir,
    relativeDir,
    appendEvent: (event) => events.write(JSON.stringify(event) + '\n'),
    async finish(status, outcome) {
      await new Promise<void>((resolve) => events.end(resolve));
      await writeJsonAtomic(path.join(dir, 'run.json'), {
        ...base,
        status,
        finishedAt: new Date().toISOString(),
        ...outcome,
      });
    },
  };
}
