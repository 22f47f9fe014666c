// An engine host whose supervisor is gone stops training, whichever it notices first: its channel's end, or a
// send that fails because nobody reads (the case a CI run caught: the host's uncaught EPIPE began an exit that
// waited for the run's last epoch, so a killed `trainbench train` left its host training). The channel's end
// is test/cli/run-interrupted.test.ts's case.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ModelSpecSchema } from '../../src-main/api/model-spec';
import { TrainOptionsSchema } from '../../src-main/api/training';
import { createServices } from '../../src-main/core/services';
import type { HostTrainParams } from '../../src-main/engine/host-protocol';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

let ws: { dir: string; cleanup(): void };
let paramsFile: string;
beforeAll(async () => {
  requireBuilt();
  ws = tempDir();
  const services = await createServices({ workspaceDir: ws.dir });
  const data = await services.datasets.trainingData({ kind: 'fashion-mnist' }, {});
  await services.dispose();
  const params: HostTrainParams = {
    runId: 'orphan',
    spec: ModelSpecSchema.parse({ family: 'mlp', input: [1, 28, 28], outputs: 10 }),
    data,
    // Events every 20 ms, and far more steps than the test waits for: it only ends if the host stops it.
    options: TrainOptionsSchema.parse({ device: 'cpu', batchSize: 64, epochs: 20, eventIntervalMs: 20, threads: 1 }),
  };
  paramsFile = path.join(ws.dir, 'params.json');
  writeFileSync(paramsFile, JSON.stringify(params));
}, 120_000);
afterAll(() => ws?.cleanup());

/** Runs parent.py: the host trains, and after `events` step events the supervisor stops reading. */
function cutAfter(events: number): { exited: boolean; seconds: number; code?: number; error?: string } {
  const out = execFileSync('python3', [path.join(__dirname, 'orphan-host', 'parent.py'), process.execPath, HOST_ENTRY, paramsFile, String(events), '20'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}');
}

// parent.py hands the host a Unix socket as its channel; Windows gives Node's children named pipes instead.
describe.skipIf(process.platform === 'win32')('an engine host whose supervisor stopped reading', () => {
  it('cancels its run and exits within seconds when a send fails, even though its channel never ends', () => {
    for (const events of [1, 4]) {
      const r = cutAfter(events);
      expect(r, `cut after ${events} events`).toMatchObject({ exited: true, code: 0 });
      expect(r.seconds).toBeLessThan(5);
    }
  }, 120_000);
});
