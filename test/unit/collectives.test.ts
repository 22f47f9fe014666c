// The multi-rank verdicts (issue 40) on simulated DDP steps: 4 ranks, 3 gradient buckets a step, each rank's
// arrivals its own data wait, compute and host time after the step's start, the all-reduce done a transfer after
// the last arrival. A planted straggler is named with its phase; a clean run, or a lateness within the clocks'
// noise, names none.
import { describe, expect, it } from 'vitest';

import { seededRandom } from '../../src-main/core/stats/medians';
import type { RankCollective, RankStep } from '../../src-main/core/stats/collectives';
import { communication, scalingEfficiency, straggler, wilson } from '../../src-main/core/stats/collectives';

interface Plant {
  rank: number;
  dataMs?: number;
  computeMs?: number;
  hostMs?: number;
}

const BUCKET_BYTES = 25 * 2 ** 20;
const TRANSFER_MS = 4;

function job(steps: number, plant: Plant | null, seed = 1, ranks = 4): { collectives: RankCollective[]; steps: RankStep[] } {
  const random = seededRandom(seed);
  const noise = (ms: number) => (random() - 0.5) * 2 * ms;
  const collectives: RankCollective[] = [];
  const out: RankStep[] = [];
  let start = 0;
  for (let step = 1; step <= steps; step++) {
    const per = Array.from({ length: ranks }, (_, rank) => {
      const p = plant?.rank === rank ? plant : null;
      const data = 2 + noise(0.5) + (p?.dataMs ?? 0);
      const host = 1 + noise(0.3) + (p?.hostMs ?? 0);
      const compute = 20 + noise(1) + (p?.computeMs ?? 0);
      // Backward produces the buckets in turn: the first after a third of it, the last at its end.
      const arrivals = [1, 2, 3].map((b) => start + data + host + (compute * b) / 3);
      return { rank, data, host, compute, arrivals };
    });
    let end = start;
    for (let index = 0; index < 3; index++) {
      const last = Math.max(...per.map((r) => r.arrivals[index]));
      for (const r of per) {
        const done = last + TRANSFER_MS + noise(0.2);
        collectives.push({ rank: r.rank, step, index, arriveMs: r.arrivals[index], doneMs: done, bytes: BUCKET_BYTES });
        end = Math.max(end, done);
      }
    }
    for (const r of per) {
      const comm = collectives.filter((c) => c.step === step && c.rank === r.rank).reduce((s, c) => s + (c.doneMs - c.arriveMs), 0);
      out.push({ rank: r.rank, step, stepMs: end - start, dataMs: r.data, computeMs: r.compute, commMs: comm });
    }
    start = end + 0.5;
  }
  return { collectives, steps: out };
}

describe('straggler', () => {
  it('names a rank that sleeps 30 ms before its backward, with host as its phase', () => {
    const { collectives, steps } = job(40, { rank: 3, hostMs: 30 });
    const v = straggler(collectives, steps);
    expect(v.rank).toBe(3);
    expect(v.phase).toBe('host');
    expect(v.lastShare.find((s) => s.rank === 3)!.share).toBe(1);
    expect(v.lateMs).toBeGreaterThan(25);
    expect(v.why).toMatch(/^rank 3 arrives last at 100% of 40 steps \(95% interval 91%-100%, chance 25%\), \d\d\.\d\d ms after the others' median arrival; it spends longer than the others in host work/);
  });

  it("measures lateness against the other ranks' median: with two ranks, the whole gap, not half of it", () => {
    const { collectives, steps } = job(40, { rank: 1, hostMs: 30 }, 1, 2);
    const v = straggler(collectives, steps);
    expect(v.rank).toBe(1);
    expect(v.lateMs).toBeGreaterThan(27);
    expect(v.lateMs).toBeLessThan(33);
  });

  it('names the phase that makes it late: its data wait, or its compute', () => {
    const data = job(30, { rank: 1, dataMs: 15 });
    expect(straggler(data.collectives, data.steps)).toMatchObject({ rank: 1, phase: 'data' });
    const compute = job(30, { rank: 2, computeMs: 12 });
    expect(straggler(compute.collectives, compute.steps)).toMatchObject({ rank: 2, phase: 'compute' });
  });

  it('names none in a clean run: the last rank is whoever the noise makes it, about as often as chance', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { collectives, steps } = job(60, null, seed);
      const v = straggler(collectives, steps);
      expect(v.rank, v.why).toBeNull();
      // Either guard may be what holds: no rank last more often than chance, or the most frequent one late by noise only.
      expect(v.why).toMatch(/^no straggler: (no rank arrives last more often than chance|rank \d arrives last at \d+% of 60 steps, but only 0\.\d\d ms after)/);
    }
  });

  it('names none when the lateness is within the clocks uncertainty, however steady', () => {
    const { collectives, steps } = job(40, { rank: 0, hostMs: 1.5 });
    expect(straggler(collectives, steps).rank).toBe(0);
    const v = straggler(collectives, steps, { clockUncertaintyMs: 3 });
    expect(v.rank).toBeNull();
    expect(v.why).toMatch(/^no straggler: rank 0 arrives last at \d+% of 40 steps, but only [\d.]+ ms after the others' median, within the noise \(3\.00 ms\)$/);
  });

  it('leaves out steps a rank did not report, and says when too few are left', () => {
    const { collectives, steps } = job(3, { rank: 3, hostMs: 30 });
    const partial = collectives.filter((c) => !(c.rank === 0 && c.step >= 2));
    const v = straggler(partial, steps);
    expect(v.steps).toBe(1);
    expect(v.rank).toBeNull();
    expect(v.why).toBe("too few steps with every rank's collectives (1) to name a straggler");
  });
});

describe('communication', () => {
  it('exposed communication is the wait after the last arrival; bus bandwidth is bytes x 2(n-1)/n over that wait', () => {
    const { collectives, steps } = job(20, null);
    const c = communication(collectives, steps);
    // Three transfers of 4 ms in a step of about 2 + 1 + 20 + 4 ms after the last bucket.
    expect(c.exposedShare).toBeGreaterThan(0.35);
    expect(c.exposedShare).toBeLessThan(0.5);
    const expected = (BUCKET_BYTES * 1.5) / (TRANSFER_MS / 1000);
    expect(c.busBytesPerSec! / expected).toBeGreaterThan(0.9);
    expect(c.busBytesPerSec! / expected).toBeLessThan(1.1);
  });

  it('a slower link shows as more exposed communication and a lower bus bandwidth', () => {
    const fast = job(20, null);
    const slow = { ...fast, collectives: fast.collectives.map((c) => ({ ...c, doneMs: c.doneMs + 8 })) };
    const a = communication(fast.collectives, fast.steps);
    const b = communication(slow.collectives, slow.steps.map((s) => ({ ...s, stepMs: s.stepMs + 24 })));
    expect(b.exposedShare).toBeGreaterThan(a.exposedShare);
    expect(b.busBytesPerSec!).toBeLessThan(a.busBytesPerSec! / 2);
  });
});

/** The same job timed once a step, as DDP's own stamps give it: per rank, its last bucket's arrival and the last completion. */
function perStep(collectives: readonly RankCollective[]): RankCollective[] {
  const out = new Map<string, RankCollective>();
  for (const c of collectives) {
    const key = `${c.rank}/${c.step}`;
    const seen = out.get(key);
    out.set(key, seen ? { ...seen, arriveMs: Math.max(seen.arriveMs, c.arriveMs), doneMs: Math.max(seen.doneMs, c.doneMs), bytes: seen.bytes + c.bytes, count: seen.count! + 1 } : { ...c, index: 0, count: 1 });
  }
  return [...out.values()];
}

describe('timed once a step', () => {
  it('names the same straggler and the same exposed communication, and no bandwidth (the earlier buckets overlap the backward)', () => {
    const { collectives, steps } = job(30, { rank: 2, hostMs: 8 });
    const whole = perStep(collectives);
    expect(whole.every((c) => c.count === 3 && c.bytes === 3 * BUCKET_BYTES)).toBe(true);
    const v = straggler(whole, steps);
    expect(v.rank, v.why).toBe(2);
    expect(v.phase).toBe('host');
    expect(v.lateMs).toBeGreaterThan(6);
    const c = communication(whole, steps);
    expect(c.busBytesPerSec).toBeNull();
    // Only the last bucket's transfer is after the last arrival: a third of the per-bucket sum, plus the noise.
    expect(c.exposedShare).toBeGreaterThan(0.1);
    expect(c.exposedShare).toBeLessThan(communication(collectives, steps).exposedShare);
  });
});

describe('helpers', () => {
  it("wilson's interval is inside [0, 1] and narrows with n", () => {
    expect(wilson(0, 0)).toEqual({ low: 0, high: 1 });
    const small = wilson(3, 4);
    const large = wilson(75, 100);
    expect(small.high - small.low).toBeGreaterThan(large.high - large.low);
    expect(wilson(10, 10).high).toBeCloseTo(1, 12);
    expect(large.low).toBeCloseTo(0.657, 2);
  });

  it('a collective one rank reported twice while another never did is not complete, and is not counted', () => {
    const c = (rank: number, arriveMs: number): RankCollective => ({ rank, step: 1, index: 0, arriveMs, doneMs: 10, bytes: 1024 });
    const steps: RankStep[] = [0, 1].map((rank) => ({ rank, step: 1, stepMs: 20, dataMs: 0, computeMs: 5, commMs: 5 }));
    // Ranks 0 and 1 exist (step 2 has both), but step 1's collective was reported by rank 0 alone, twice.
    const both = [0, 1].map((rank): RankCollective => ({ rank, step: 2, index: 0, arriveMs: 0, doneMs: 2, bytes: 1024 }));
    const v = communication([c(0, 0), c(0, 1), ...both], [...steps, ...steps.map((s) => ({ ...s, step: 2 }))]);
    expect(v.exposedShare).toBeCloseTo(2 / 20, 9); // step 2's wait alone
  });

  it("a wrong clock offset cannot make the straggler's wait the exposed one: the smallest own wait is", () => {
    // Rank 1 arrives 5 ms after rank 0 and the all-reduce ends 1 ms later for both (true exposed wait: 1 ms), but
    // rank 1's offset is 10 ms off, so on the collector's clock rank 0 seems to arrive last, with its own 6 ms wait.
    const steps: RankStep[] = [0, 1].map((rank) => ({ rank, step: 1, stepMs: 20, dataMs: 0, computeMs: 5, commMs: 5 }));
    const v = communication(
      [
        { rank: 0, step: 1, index: 0, arriveMs: 0, doneMs: 6, bytes: 1024 },
        { rank: 1, step: 1, index: 0, arriveMs: 5 - 10, doneMs: 6 - 10, bytes: 1024 },
      ],
      steps,
    );
    expect(v.exposedShare).toBeCloseTo(1 / 20, 9);
    expect(v.busBytesPerSec).toBeNull(); // the stamps disagree (an arrival after a completion)
  });

  it('scaling efficiency is the job against nodes x one node, and refuses a rate of 0, naming it', () => {
    expect(scalingEfficiency(1800, 1000, 2)).toBeCloseTo(0.9);
    expect(() => scalingEfficiency(1800, 0, 2)).toThrow('scaling efficiency needs a one-node rate above 0 and at least one node, got 0 and 2');
  });
});
