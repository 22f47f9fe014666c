// The host sampler reads the disks' I/O from /proc/diskstats itself (systeminformation's fsStats started six
// processes a sample). The parser against a recorded file; the sampler against this machine's /proc.
import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { diskBytes, HostSampler } from '../../src-main/core/telemetry/host-sampler';
import { REPO_ROOT } from '../helpers/repo';

const DISKSTATS = readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'proc', 'diskstats-vm.txt'), 'utf8');

describe('diskBytes', () => {
  it('sums the named disks’ sectors read and written, in bytes, and nothing else', () => {
    // vda: 10,500,458 sectors read, 16,128,872 written (fields 6 and 10).
    expect(diskBytes(DISKSTATS, new Set(['vda']))).toEqual({ rx: 10_500_458 * 512, wx: 16_128_872 * 512 });
    expect(diskBytes(DISKSTATS, new Set())).toEqual({ rx: 0, wx: 0 });
    // loop and zram devices are there, idle; naming them adds their zeros only.
    expect(diskBytes(DISKSTATS, new Set(['vda', 'loop0', 'zram0']))).toEqual({ rx: 10_500_458 * 512, wx: 16_128_872 * 512 });
  });

  it('skips a cut-off last line and a line whose counters are not numbers', () => {
    const vda = DISKSTATS.split('\n').find((l) => /\svda\s/.test(l))!;
    const cut = `${DISKSTATS}${vda.slice(0, 30)}`;
    expect(diskBytes(cut, new Set(['vda']))).toEqual({ rx: 10_500_458 * 512, wx: 16_128_872 * 512 });
    expect(diskBytes(vda.replace('10500458', 'x'), new Set(['vda']))).toEqual({ rx: 0, wx: 0 });
  });
});

describe.skipIf(process.platform !== 'linux')('HostSampler on this machine', () => {
  it('gives the disks’ read and write rates from the second sample on, as numbers of bytes a second', async () => {
    const sampler = new HostSampler();
    const first = await sampler.sample(null);
    expect(first.diskReadBytesPerSec).toBeNull(); // no earlier reading to take a rate from
    await new Promise((resolve) => setTimeout(resolve, 100));
    const second = await sampler.sample(process.pid);
    for (const rate of [second.diskReadBytesPerSec, second.diskWriteBytesPerSec]) {
      expect(Number.isFinite(rate)).toBe(true);
      expect(rate!).toBeGreaterThanOrEqual(0);
    }
    expect(second.memTotalBytes).toBeGreaterThan(0);
    expect(second.engineHost).toMatchObject({ pid: process.pid });
    expect(second.engineHost!.rssBytes!).toBeGreaterThan(0);
  });
});
