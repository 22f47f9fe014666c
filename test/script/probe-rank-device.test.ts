// Issue 30, finding 9: under torchrun without torch.cuda.set_device, each rank's CUDA events and peak
// memory are its own device's, not cuda:0's. Needs a torch with CUDA and two GPUs; skips saying so.
import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { freePort } from '../helpers/free-port';
import { binOf, doneOf, INTERPRETERS, runProbed, stepsOf } from './probe-run';

function cudaDevices(python: string): number {
  try {
    return Number(execFileSync(python, ['-c', 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    return 0;
  }
}

describe.each(INTERPRETERS)('rank devices on $label', (interp) => {
  const gpus = interp.python ? cudaDevices(interp.python) : 0;
  const why = interp.python === null ? interp.why : `${gpus} CUDA device(s) visible to this torch; the test needs 2`;
  describe.skipIf(gpus < 2)(gpus >= 2 ? 'two GPUs' : `skipped: ${why}`, () => {
    it('each rank reports events and peak memory of cuda:LOCAL_RANK', async () => {
      const torchrun = binOf(interp.python!, 'torchrun');
      const run = await runProbed([torchrun, '--nproc_per_node', '2', '--master_port', String(await freePort()), '--redirects', '1', '--tee', '1', 'ddp_rank_device.py'], { timeoutMs: 180_000 });
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      expect(run.invalid).toEqual([]);
      expect(run.processes).toHaveLength(2);
      for (const p of run.processes) {
        const done = doneOf(p) as unknown as { memory: { device: string; cudaPeakBytes: number } };
        expect(done.memory.device).toBe(`cuda:${p.hello.localRank}`);
        expect(done.memory.cudaPeakBytes).toBeGreaterThan(0);
        expect(stepsOf(p).every((s) => (s as unknown as { timing: string }).timing === 'cuda-events')).toBe(true);
      }
    }, 240_000);
  });
});
