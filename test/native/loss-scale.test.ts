// The fp16 dynamic loss-scale rule (optim/loss_scaler.h). The CUDA step runs
// this same definition on the device; here it is replayed on the host, so the
// rule is tested on machines without a GPU too.
import { describe, expect, it } from 'vitest';

import { loadAddon } from '../helpers/native';

const addon = loadAddon();

describe('dynamic loss scaling', () => {
  it('starts at 2^16, doubles after growthInterval clean steps, halves and skips on inf/nan', () => {
    const steps = addon.lossScaleSchedule([false, false, false, true, false, false], 2);
    expect(steps).toEqual([
      { scale: 65536, applied: true },
      { scale: 131072, applied: true },
      { scale: 131072, applied: true },
      { scale: 65536, applied: false },
      { scale: 65536, applied: true },
      { scale: 131072, applied: true },
    ]);
  });

  it('a back-off restarts the count of clean steps', () => {
    const steps = addon.lossScaleSchedule([false, true, false, false], 3);
    expect(steps.map((s) => s.scale)).toEqual([65536, 32768, 32768, 32768]);
  });

  it('never falls below 1 nor grows past 2^24', () => {
    const down = addon.lossScaleSchedule(Array<boolean>(40).fill(true), 2000);
    expect(down.at(-1)).toEqual({ scale: 1, applied: false });
    const up = addon.lossScaleSchedule(Array<boolean>(100).fill(false), 1);
    expect(up.at(-1)?.scale).toBe(16_777_216);
  });
});

describe('cuBLASLt is optional', () => {
  it('says whether it loaded, and why not', () => {
    const lt = addon.cublasLt();
    if (lt.loaded) expect(lt.library).toMatch(/cublasLt/i);
    else expect(lt.reason).toMatch(/cublasLt|no CUDA backend/i);
    console.log(`cuBLASLt: ${lt.loaded ? `loaded from ${lt.library}` : `not loaded (${lt.reason})`}`);
  });
});
