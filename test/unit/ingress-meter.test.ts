import { describe, expect, it } from 'vitest';

import { IngressMeter, readHolds } from '../../src-main/server/ingress-meter';

const until = async (done: () => boolean) => {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('IngressMeter', () => {
  it('reads a burst at once, pauses the read that goes into debt, and reads every paused connection again once it is paid', async () => {
    // 10,000 bytes a second, 1,000 at once.
    const meter = new IngressMeter({ bytes: 10_000, burst: 1_000, minRead: 1 });
    const calls: string[] = [];
    const a = meter.open(() => calls.push('pause a'), () => calls.push('resume a'));
    const b = meter.open(() => calls.push('pause b'), () => calls.push('resume b'));
    a.read(600);
    b.read(300);
    expect(calls).toEqual([]);
    const t0 = performance.now();
    // 500 bytes in debt: 50 ms to pay.
    a.read(600);
    expect(calls).toEqual(['pause a']);
    // A read already under way when a connection is paused is charged, but pauses it once.
    a.read(10);
    b.read(100);
    expect(calls).toEqual(['pause a', 'pause b']);
    await until(() => calls.length === 4);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(55);
    // Both again, in the order they were paused.
    expect(calls).toEqual(['pause a', 'pause b', 'resume a', 'resume b']);
  });

  it('keeps to its rate: 64 KiB reads from four connections for 0.5 s take about 0.5 s of the rate, whoever reads', async () => {
    const rate = 4 * 1024 * 1024;
    const meter = new IngressMeter({ bytes: rate, burst: 256 * 1024, minRead: 1 });
    let read = 0;
    const t0 = performance.now();
    // Each connection reads 64 KiB whenever it is not paused (a client that always has bytes to send).
    const conns = Array.from({ length: 4 }, () => {
      const c = { paused: false, reader: null as unknown as ReturnType<IngressMeter['open']> };
      const pump = () => {
        while (!c.paused && performance.now() - t0 < 500) {
          read += 65_536;
          c.reader.read(65_536);
        }
      };
      c.reader = meter.open(
        () => (c.paused = true),
        () => {
          c.paused = false;
          setImmediate(pump);
        },
      );
      return { c, pump };
    });
    for (const { pump } of conns) pump();
    await new Promise((resolve) => setTimeout(resolve, 600));
    const seconds = (performance.now() - t0) / 1000;
    // The burst, a second's rate for the time, and at most one read of each connection beyond it.
    expect(read).toBeLessThanOrEqual(256 * 1024 + rate * seconds + 4 * 65_536);
    expect(read).toBeGreaterThan(rate * 0.3);
  });

  it('charges a read at least what a read costs: 1-byte reads are paused after a burst’s worth of reads, not of bytes (re-attack 26)', () => {
    const meter = new IngressMeter({ bytes: 10_000, burst: 10_000, minRead: 1_000 });
    const calls: string[] = [];
    const a = meter.open(() => calls.push('pause a'), () => calls.push('resume a'));
    for (let i = 0; i < 10; i++) a.read(1);
    expect(calls).toEqual([]);
    a.read(1);
    expect(calls).toEqual(['pause a']);
    a.close();
  });

  it('starts a connection opened while in debt paused, and forgets a closed one', async () => {
    const meter = new IngressMeter({ bytes: 10_000, burst: 100, minRead: 1 });
    const calls: string[] = [];
    const a = meter.open(() => calls.push('pause a'), () => calls.push('resume a'));
    a.read(300);
    const b = meter.open(() => calls.push('pause b'), () => calls.push('resume b'));
    expect(calls).toEqual(['pause a', 'pause b']);
    a.close();
    await until(() => calls.length === 3);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls).toEqual(['pause a', 'pause b', 'resume b']);
    b.close();
  });
});

describe('readHolds', () => {
  it('pauses on the first hold and resumes only when neither the turns nor the bytes hold the socket', () => {
    const calls: string[] = [];
    const hold = readHolds(() => calls.push('pause'), () => calls.push('resume'));
    hold('turns', true);
    hold('bytes', true);
    hold('turns', false);
    expect(calls).toEqual(['pause']);
    hold('bytes', false);
    expect(calls).toEqual(['pause', 'resume']);
    // A release of what was not held changes nothing.
    hold('bytes', false);
    expect(calls).toEqual(['pause', 'resume']);
  });
});
