// On Windows a rename fails for a moment while another process holds the target
// open (a reader, an antivirus scan): atomic writes wait that out there, and
// only there.
import { describe, expect, it } from 'vitest';

import { renameReplacing } from '../../src-main/core/workspace/atomic-write';

const busyThen = (failures: number, code: string) => {
  let calls = 0;
  const rename = async () => {
    calls++;
    if (calls <= failures) throw Object.assign(new Error(`${code}: operation not permitted, rename`), { code });
  };
  return { rename, calls: () => calls };
};

describe('renameReplacing', () => {
  it('retries a target held open on Windows until it is free', async () => {
    for (const code of ['EPERM', 'EACCES', 'EBUSY']) {
      const fake = busyThen(3, code);
      await renameReplacing('a', 'b', 'win32', fake.rename);
      expect(fake.calls()).toBe(4);
    }
  });

  it('gives up on Windows after about a second, with the original error', async () => {
    const fake = busyThen(100, 'EPERM');
    const started = Date.now();
    await expect(renameReplacing('a', 'b', 'win32', fake.rename)).rejects.toMatchObject({ code: 'EPERM' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(fake.calls()).toBe(8);
  });

  it('does not retry elsewhere, or errors that waiting cannot fix', async () => {
    const linux = busyThen(1, 'EPERM');
    await expect(renameReplacing('a', 'b', 'linux', linux.rename)).rejects.toMatchObject({ code: 'EPERM' });
    expect(linux.calls()).toBe(1);
    const missing = busyThen(1, 'ENOENT');
    await expect(renameReplacing('a', 'b', 'win32', missing.rename)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(missing.calls()).toBe(1);
  });
});
