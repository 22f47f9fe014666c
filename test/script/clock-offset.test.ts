// The probe's clock offset against the collector (issue 40), NTP-style, on made-up exchanges: the round trip with the
// least delay gives the estimate and half its delay the uncertainty; a collector that does not answer is asked once.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { PYTHON } from './script-helpers';

const PROBE = path.resolve(__dirname, '../../resources/python');

function py(body: string): unknown {
  const code = `import json, sys\nsys.path.insert(0, ${JSON.stringify(PROBE)})\nfrom trainbench_probe import collectives as c\n${body}`;
  return JSON.parse(execFileSync(PYTHON, ['-c', code], { encoding: 'utf8' }).trim());
}

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
