import type { WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import type { ApiErrorPayload } from '../../api/errors';
import { ApiError } from '../../api/errors';
import type { RunComputeDevice, RunEnvironment, RunRecordJson, StoredRunStatus } from '../../api/run-record';
import { RUN_HEARTBEAT_INTERVAL_MS, RUN_SCHEMA_VERSION } from '../../api/run-record';
import { newJobId } from '../../api/ids';
import { buildInfo } from '../common/build-info';
import { WorkspaceFileError } from './file-error';
import type { Workspace } from './workspace';
import { createFileWriteStream, makeFolder, makeFolderExclusive, stillAtName, writeJsonConfined } from './workspace-files';

/** One run's folder: run.json (rewritten atomically) and events.jsonl (appended). */
export interface RunRecord {
  id: string;
  /** Absolute path of runs/<id>. */
  dir: string;
  /** Path relative to the workspace, for results people read. */
  relativeDir: string;
  appendEvent(event: unknown): void;
  /** A new file of the run's folder to write into (a log, telemetry), or appended to with `append`. */
  stream(name: string, options?: { append?: boolean }): WriteStream;
  /** Writes a JSON file of the run's folder by temp file + rename (a wizard's state). */
  writeJson(name: string, value: unknown): Promise<void>;
  finish(status: Exclude<StoredRunStatus, 'running'>, outcome: { result?: RunRecordJson['result']; error?: ApiErrorPayload }): Promise<void>;
  /** Records why the run ended early (cancelled for E_CANCELLED, failed otherwise) and returns the error to throw. */
  fail(err: unknown): Promise<ApiError>;
}

export interface CreateRunOptions {
  /** Tests shorten it; everyone else uses RUN_HEARTBEAT_INTERVAL_MS, which readers rely on. */
  heartbeatMs?: number;
  /** An id the caller chose (so a UI can follow its own run's events from the first one); refused if taken. */
  id?: string;
  /** What the run computes on (engine runs; a script's runs know their own device). */
  computeDevice?: RunComputeDevice;
}


function environment(computeDevice?: RunComputeDevice): RunEnvironment {
  const build = buildInfo();
  return {
    platform: process.platform,
    arch: process.arch,
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    hostname: os.hostname(),
    trainbench: build.version,
    ...(build.commit ? { trainbenchCommit: build.commit } : {}),
    ...(computeDevice ? { computeDevice } : {}),
  };
}

/**
 * Creates runs/<id>/ owned by this process: run.json names the pid and host and
 * carries a heartbeat refreshed while the run is live, so a reader can tell a
 * run whose process was killed from one still training.
 */
export async function createRun(workspace: Workspace, kind: string, config: RunRecordJson['config'], options: CreateRunOptions = {}): Promise<RunRecord> {
  const id = options.id ?? newJobId();
  const relativeDir = path.join('runs', id);
  await makeFolder(workspace, 'runs');
  const dir = await makeFolderExclusive(workspace, relativeDir).catch((err: NodeJS.ErrnoException) => {
    throw err.code === 'EEXIST' ? new ApiError('E_BAD_INPUT', `a run with the id ${id} exists already: choose another`) : err;
  });
  const file = path.join(relativeDir, 'run.json');
  const createdAt = new Date().toISOString();
  const running: RunRecordJson = {
    schemaVersion: RUN_SCHEMA_VERSION,
    id,
    kind,
    status: 'running',
    createdAt,
    config,
    environment: environment(options.computeDevice),
    owner: { pid: process.pid, host: os.hostname(), startedAt: createdAt },
    heartbeatAt: createdAt,
  };
  // Every rewrite goes through this one chain, so a heartbeat can never land after the final record.
  let writes: Promise<void> = writeJsonConfined(workspace, file, running);
  await writes;
  const write = (record: RunRecordJson): Promise<void> => (writes = writes.catch(() => undefined).then(() => writeJsonConfined(workspace, file, record)));

  const beat = setInterval(() => {
    // A missed beat (say, a full disk) only ages the heartbeat; the next one may succeed.
    write({ ...running, heartbeatAt: new Date().toISOString() }).catch(() => undefined);
  }, options.heartbeatMs ?? RUN_HEARTBEAT_INTERVAL_MS);
  beat.unref(); // the heartbeat alone never keeps a process alive

  // The first write into the run's files that failed (a full disk): the run cannot be recorded whole, so it fails.
  let unwritten: ApiError | null = null;
  const onError = (err: ApiError) => void (unwritten ??= err);
  const events: WriteStream = createFileWriteStream(workspace, path.join(relativeDir, 'events.jsonl'), { append: true, onError });
  const finish: RunRecord['finish'] = async (status, outcome) => {
    clearInterval(beat);
    // The events file no longer at its name: the run folder was removed, renamed or replaced while the run wrote into
    // it, and its events and telemetry went with it (the write below would make a new folder and call it complete).
    if (!(await stillAtName(workspace, path.join(relativeDir, 'events.jsonl'), events))) {
      unwritten ??= new WorkspaceFileError('missing', relativeDir, `${relativeDir} was removed or moved while the run wrote into it: its events and telemetry are not there`);
    }
    await new Promise<void>((resolve) => events.end(resolve));
    const finishedAt = new Date().toISOString();
    const lost = status === 'completed' ? unwritten : null;
    try {
      await write({ ...running, heartbeatAt: finishedAt, status: lost ? 'failed' : status, finishedAt, ...outcome, ...(lost ? { error: lost.toPayload() } : {}) });
    } catch (err) {
      // The record itself could not be written (the same full disk): the first write that failed is the cause to act on.
      throw unwritten ?? err;
    }
    if (lost) throw lost;
  };
  return {
    id,
    dir,
    relativeDir,
    appendEvent: (event) => {
      // Thrown where the job records its progress (inside its engine or probe listener, which ends the job with it),
      // so a run whose files cannot be written stops, rather than training on for hours unrecorded.
      if (unwritten) throw unwritten;
      events.write(JSON.stringify(event) + '\n');
    },
    stream: (name, options) => createFileWriteStream(workspace, path.join(relativeDir, name), { ...options, onError }),
    writeJson: (name, value) => writeJsonConfined(workspace, path.join(relativeDir, name), value),
    finish,
    async fail(err) {
      const error = err instanceof ApiError ? err : new ApiError('E_INTERNAL', (err as Error).message);
      // Unrecorded (run.json cannot be written), the run reads "interrupted" once its stopped heartbeat ages; the job
      // still answers with why it ended.
      await finish(error.code === 'E_CANCELLED' ? 'cancelled' : 'failed', { error: error.toPayload() }).catch(() => undefined);
      return error;
    },
  };
}
