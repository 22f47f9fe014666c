// The copy floor's probe (issue 26): pinned host-to-device copies timed on cuda:0, read back and
// compared by the probe itself, through the addon and through the engine host. Its bad inputs are
// refused naming the value on every machine; the rest skips without a device, or fails under
// TB_REQUIRE_GPU=1 (gpu-gate.ts). On the emulated device the result says "emulated".
import { afterAll, describe, expect, it } from 'vitest';

import { EngineClient } from '../../src-main/engine/engine-client';
import type { NativeError } from '../../src-main/engine/native-addon';
import { loadAddon } from '../helpers/native';
import { HOST_ENTRY } from '../helpers/repo';
import { EMULATED, gpuAvailable, gpuTimeout } from './gpu-gate';

const addon = loadAddon();
const gpu = gpuAvailable('GPU copy tests');

/** The error of a call that throws at once (arguments) or rejects later (the engine's checks). */
async function refusal(call: () => Promise<unknown>): Promise<NativeError> {
  try {
    await call();
  } catch (err) {
    return err as NativeError;
  }
  throw new Error('expected a refusal');
}

describe('the host-to-device copy probe refuses bad sizes, on any machine', () => {
  it.each([
    [0, 5, 'copy size 0 bytes'],
    [2 ** 31, 5, 'copy size 2147483648 bytes'],
    [1.5, 5, 'copy size 1.5 bytes is not a whole number'],
    [Number.NaN, 5, 'copy size NaN bytes is not a whole number'],
    [1024, 0, 'copy repetitions 0'],
    [1024, 101, 'copy repetitions 101'],
  ])('bytes %s, reps %s', async (bytes, reps, words) => {
    const err = await refusal(() => addon.benchH2dCopy(0, bytes, reps));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain(words);
  });
});

describe.skipIf(!gpu)('pinned host-to-device copies on cuda:0', () => {
  const engine = new EngineClient({ entry: HOST_ENTRY, env: {}, restartDelaysMs: [20] });
  afterAll(() => engine.stop());

  it('times copies of an odd size that arrive byte for byte, and says where they ran', async () => {
    const r = await addon.benchH2dCopy(0, 1_000_003, 5);
    expect(r).toMatchObject({ bytes: 1_000_003, reps: 5, emulated: EMULATED });
    expect(r.bestSeconds).toBeGreaterThan(0);
    expect(r.medianSeconds).toBeGreaterThanOrEqual(r.bestSeconds);
    expect(r.bestMBps).toBeCloseTo(1_000_003 / r.bestSeconds / 1e6, 6);
    expect(r.how).toContain('pinned cudaMemcpyAsync to cuda:0, best of 5');
    expect(r.how.includes('emulated')).toBe(EMULATED);
    // Any PCIe link a training GPU sits on moves a megabyte from pinned memory at over 1 GB/s.
    if (!EMULATED) expect(r.bestMBps).toBeGreaterThan(1000);
  }, gpuTimeout(60_000));

  it('refuses a device that is not there, naming it', async () => {
    const count = addon.devices().cuda.devices.length;
    const err = await refusal(() => addon.benchH2dCopy(count, 1024, 1));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain(`there is no cuda:${count}`);
  });

  it('answers through the engine host as the wizard asks it', async () => {
    const r = await engine.benchH2dCopy(0, 65_536, 3);
    expect(r).toMatchObject({ bytes: 65_536, reps: 3, emulated: EMULATED });
    expect(r.bestMBps).toBeGreaterThan(0);
  }, gpuTimeout(60_000));
});
