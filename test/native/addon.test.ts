// Calls the built addon directly, in this process: the N-API surface and its error conversion.
import { createRequire } from 'node:module';

import { beforeAll, describe, expect, it } from 'vitest';

import { DevicesSchema } from '../../src-main/api/devices';
import type { NativeAddon, NativeError } from '../../src-main/engine/native-addon';
import { ADDON_PATH, requireBuilt } from '../helpers/repo';

let addon: NativeAddon;

beforeAll(() => {
  requireBuilt();
  addon = createRequire(__filename)(ADDON_PATH) as NativeAddon;
});

function thrown(fn: () => unknown): NativeError {
  try {
    fn();
  } catch (err) {
    return err as NativeError;
  }
  throw new Error('expected a throw');
}

describe('native addon', () => {
  it('reports its version and build features', () => {
    const v = addon.version();
    expect(v.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(v.napiVersion).toBe(8);
    expect(typeof v.cudaCompiled).toBe('boolean');
  });

  it('describes the CPU and answers about CUDA without crashing on a machine without a driver', () => {
    const devices = DevicesSchema.parse(addon.devices());
    expect(devices.cpu.logicalCores).toBeGreaterThan(0);
    expect(devices.cpu.name.length).toBeGreaterThan(0);
    if (devices.cuda.available) {
      expect(devices.cuda.devices.length).toBeGreaterThan(0);
      expect(devices.cuda.reason).toBeNull();
    } else {
      expect(devices.cuda.devices).toEqual([]);
      expect(devices.cuda.reason).toMatch(/driver|device|build/i);
    }
  });

  it('resolves "cpu"', () => {
    expect(addon.resolveDevice('cpu')).toEqual({ kind: 'cpu', index: 0 });
  });

  it.each(['gpu0', 'cuda:', 'cuda:x', 'CPU', ''])('rejects the device name %j with E_BAD_INPUT naming it', (name) => {
    const err = thrown(() => addon.resolveDevice(name));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain(`'${name}'`);
    expect(err.where).toMatch(/device_spec\.cpp:\d+/);
  });

  it('rejects a CUDA device this machine does not have, with the reason', () => {
    const devices = addon.devices();
    const missing = `cuda:${devices.cuda.devices.length}`;
    const err = thrown(() => addon.resolveDevice(missing));
    expect(err.code).toBe('E_BAD_INPUT');
    expect(err.message).toContain(missing);
    if (!devices.cuda.available) expect(err.message).toContain(devices.cuda.reason ?? '');
  });

  it('rejects a non-string argument with E_BAD_INPUT instead of crashing', () => {
    const err = thrown(() => (addon.resolveDevice as unknown as (x: unknown) => unknown)(42));
    expect(err.code).toBe('E_BAD_INPUT');
  });
});
