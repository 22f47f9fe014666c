// The probe's clock offset against the collector (issue 40), NTP-style, on made-up exchanges: the round trip with the
// least delay gives the estimate and half its delay the uncertainty; a busy collector is asked again, a few ms apart,
// up to a bound; one that does not answer is asked once.
import { describe, expect, it } from 'vitest';

import { withProbeCollectives as py } from './script-helpers';

describe('clock_offset', () => {
  it('takes the round trip with the least delay: its offset, half its delay as the uncertainty', () => {
    // The collector runs 250 ms ahead; each exchange's one-way delays are given (ms), the collector holds 0.1 ms.
    const got = py(`
delays = [(5, 1), (0.2, 0.3), (3, 3), (1, 0.1)]
clock = {"t": 1000.0}
c.now_ms = lambda: clock["t"]
def exchange(t0):
    out, back = delays.pop(0)
    t1 = t0 + out + 250
    t2 = t1 + 0.1
    clock["t"] = t2 - 250 + back
    return (t1, t2)
print(json.dumps(c.clock_offset(exchange, probes=4)))`) as [number, number, number];
    // Best trip: 0.2 out, 0.3 back: offset = 250 + (0.2 - 0.3) / 2 = 249.95, uncertainty = 0.5 / 2 = 0.25.
    expect(got[0]).toBeCloseTo(249.95, 6);
    expect(got[1]).toBeCloseTo(0.25, 6);
    expect(got[2]).toBe(4);
  });

  // A collector whose clock runs with this one's: the i-th round trip waits one_way(i) ms each way.
  const FAKE = `
n = {"i": 0}
clock = {"t": 0.0}
c.now_ms = lambda: clock["t"]
def collector(one_way):
    def exchange(t0):
        n["i"] += 1
        d = one_way(n["i"])
        clock["t"] = t0 + 2 * d
        return (t0 + d, t0 + d)
    return exchange
`;

  it('keeps a round trip only a little faster than the best so far (not only one under half its delay)', () => {
    const got = py(`${FAKE}print(json.dumps(c.clock_offset(collector(lambda i: (10, 6, 7)[i - 1]), probes=3, most=3)))`);
    expect(got).toEqual([0, 6, 3]);
  });

  it('goes on past its first probes while they all waited behind other work, until one comes back fast', () => {
    // A busy collector: the first 11 round trips take 40 ms, the 12th 0.5 ms; then it stops (0.25 ms is good enough).
    const got = py(`${FAKE}print(json.dumps([c.clock_offset(collector(lambda i: 20 if i < 12 else 0.25)), n["i"]]))`);
    expect(got).toEqual([[0, 0.25, 12], 12]);
  });

  it('gives up after its most probes, or its time budget, with the best it saw', () => {
    const got = py(`${FAKE}exchange = collector(lambda i: 5)
print(json.dumps([c.clock_offset(exchange, most=20), n["i"], c.clock_offset(exchange, most=1000, budget_ms=300)[2]]))`);
    // 10 ms a round trip: 20 probes at most; with a 300 ms budget, the probe that starts past it is not sent.
    expect(got).toEqual([[0, 5, 20], 20, 31]);
  });

  it('stops at the first probe left unanswered and answers None when none was', () => {
    const got = py(`
calls = []
def exchange(t0):
    calls.append(t0)
    return None
print(json.dumps([c.clock_offset(exchange), len(calls)]))`);
    expect(got).toEqual([null, 1]);
  });
});
