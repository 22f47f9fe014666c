// batchSize.search on a script target over a real `trainbench serve` socket: code execution, so refused unless the
// serve was started with --allow-scripts; allowed, its trials arrive as batchSize.trial events.
import { existsSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';

import { BatchSearchResultSchema, BatchTrialEventSchema } from '../../src-main/api/batch-size';
import { requireBuilt } from '../helpers/repo';
import { startServeProcess, type ServeProcess } from '../helpers/serve-process';
import { tempDir } from '../helpers/temp-dir';
import { PYTHON, SCRIPTS } from '../script/script-helpers';

const workspace = tempDir();
const cwd = tempDir();
let refusing: ServeProcess;
let allowing: ServeProcess;

beforeAll(async () => {
  requireBuilt();
  [refusing, allowing] = await Promise.all([startServeProcess(workspace.dir), startServeProcess(workspace.dir, {}, ['--allow-scripts'])]);
}, 60_000);

afterAll(async () => {
  await Promise.all([refusing?.stop(), allowing?.stop()]);
  workspace.cleanup();
  cwd.cleanup();
});

function connect(serve: ServeProcess): Promise<WebSocket> {
  const url = new URL(serve.url);
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${url.host}/api?token=${url.searchParams.get('token')}`);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Sends one request; resolves with its response and the events that came before it. */
function call(ws: WebSocket, method: string, params: unknown): Promise<{ response: Record<string, unknown>; events: { event: string; data: unknown }[] }> {
  const events: { event: string; data: unknown }[] = [];
  return new Promise((resolve) => {
    const onMessage = (raw: WebSocket.RawData) => {
      const msg = JSON.parse(raw.toString()) as Record<string, unknown>;
      if (msg.type === 'event') events.push({ event: msg.event as string, data: msg.data });
      if (msg.type !== 'response' || msg.id !== 1) return;
      ws.off('message', onMessage);
      resolve({ response: msg, events });
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ type: 'request', id: 1, method, params }));
  });
}

describe('batchSize.search on a script target through serve', () => {
  it('is refused with E_FORBIDDEN naming --allow-scripts when serve was started without it, and runs nothing', async () => {
    const ws = await connect(refusing);
    const { response } = await call(ws, 'batchSize.search', {
      target: { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd: cwd.dir },
      jobId: 'refused-search',
    });
    ws.close();
    expect(response).toMatchObject({ ok: false, error: { code: 'E_FORBIDDEN' } });
    expect((response.error as { message: string }).message).toContain('serve mode started with --allow-scripts');
    expect(existsSync(path.join(cwd.dir, 'ran-a-command'))).toBe(false);
  });

  it('runs under --allow-scripts and streams each trial as a batchSize.trial event with the request jobId', async () => {
    const ws = await connect(allowing);
    const { response, events } = await call(ws, 'batchSize.search', {
      target: { kind: 'script', command: [PYTHON, path.join(SCRIPTS, 'oom_guard.py')], cwd: SCRIPTS, env: { OOM_AT: '20' } },
      startBatch: 16,
      maxBatch: 20,
      warmupSteps: 1,
      stepsPerTrial: 2,
      jobId: 'served-search',
    });
    ws.close();
    expect(response, JSON.stringify(response)).toMatchObject({ ok: true });
    const result = BatchSearchResultSchema.parse(response.result);
    expect(result.largestFitting).toBe(19);
    const trials = events.filter((e) => e.event === 'batchSize.trial').map((e) => BatchTrialEventSchema.parse(e.data));
    expect(trials.map((e) => [e.jobId, e.trial.batchSize, e.trial.outcome])).toEqual([
      ['served-search', 16, 'ok'],
      ['served-search', 20, 'E_OOM'],
      ['served-search', 18, 'ok'],
      ['served-search', 19, 'ok'],
    ]);
  }, 120_000);
});
