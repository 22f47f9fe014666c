// The regression gate's rule (issue 26 item 5), on repetitions of known spread: the same target "same", a slowed
// one "slower" (exit 1), a faster one "faster", and noise wider than the tolerance or other conditions
// "could not decide" (exit 2), never a guess.
import { describe, expect, it } from 'vitest';

import { conditionDifferences } from '../../src-main/core/check/check-service';
import { gateVerdict } from '../../src-main/core/check/gate-verdict';

const SAVED = [1000, 1010, 990, 1005, 995];
const scaled = (k: number) => SAVED.map((x, i) => x * k * (1 + (i % 2 ? 0.003 : -0.003)));

describe('the regression gate', () => {
  it('the same target measured again: same within the tolerance, exit 0', () => {
    const v = gateVerdict(SAVED, scaled(1), 0.05);
    expect(v).toMatchObject({ outcome: 'same', exitCode: 0, tolerance: 0.05 });
    expect(v.text).toMatch(/^same within the tolerance: [+-]\d\.\d% \(95% CI [+-]\d\.\d% to [+-]\d\.\d%\) lies within ±5\.0%$/);
  });

  it('a target 20% slower: slower by 20%, exit 1', () => {
    const v = gateVerdict(SAVED, scaled(0.8), 0.05);
    expect(v).toMatchObject({ outcome: 'slower', exitCode: 1 });
    expect(v.text).toMatch(/^slower by 20\.\d%: -20\.\d% \(95% CI -2\d\.\d% to -1\d\.\d%\), the whole interval beyond the tolerance of ±5\.0%$/);
    expect(v.change!.high).toBeLessThan(0.95);
  });

  it('a faster target: faster, exit 0', () => {
    expect(gateVerdict(SAVED, scaled(1.25), 0.05)).toMatchObject({ outcome: 'faster', exitCode: 0, text: expect.stringMatching(/^faster by 2\d\.\d%/) });
  });

  it('slower by less than the tolerance, with an interval inside it: the same', () => {
    expect(gateVerdict(SAVED, scaled(0.97), 0.05)).toMatchObject({ outcome: 'same', exitCode: 0 });
  });

  it('noise wider than the tolerance: could not decide, exit 2, and says what would narrow it', () => {
    const v = gateVerdict([1000, 600, 1400, 900, 1100], [950, 500, 1500, 800, 1200], 0.05);
    expect(v).toMatchObject({ outcome: 'undecided', exitCode: 2 });
    expect(v.text).toMatch(/reaches past the tolerance of ±5\.0%.*more repetitions or steps narrow it/);
  });

  it('2 + 2 repetitions, clearly slower: no verdict on their 66.7% interval (issue 38), and says what would decide', () => {
    const v = gateVerdict([1000, 1010], [700, 705], 0.05);
    expect(v).toMatchObject({ outcome: 'undecided', exitCode: 2 });
    expect(v.change?.coverage).toBeCloseTo(2 / 3, 12);
    expect(v.text).toMatch(/^could not decide: -30\.\d% \(66\.7% CI -30\.\d% to -29\.\d%\) rests on 2 \+ 2 repetitions, and a verdict needs an interval of 90% or more \(3 repetitions or more of each\)$/);
    // 3 + 3 reach 90%: the same change is then called slower.
    expect(gateVerdict([1000, 1010, 990], [700, 705, 695], 0.05)).toMatchObject({ outcome: 'slower', exitCode: 1, text: expect.stringContaining('(90.0% CI') });
  });

  it('one repetition on either side gives no interval: could not decide', () => {
    expect(gateVerdict([1000], scaled(0.5), 0.05)).toMatchObject({ outcome: 'undecided', exitCode: 2, change: null, text: expect.stringContaining('use 3 or more') });
  });

  it('measured on another machine or device: could not decide, naming what differs', () => {
    const env = { platform: 'linux', arch: 'x64', node: 'v20', cpus: 16, cpuModel: 'AMD EPYC', totalMemoryBytes: 1, hostname: 'rig', computeDevice: { id: 'cuda:0', name: 'NVIDIA H100 80GB HBM3' } };
    const other = { ...env, hostname: 'rig2', computeDevice: { id: 'cuda:0', name: 'NVIDIA GeForce RTX 4090' } };
    const differences = conditionDifferences(env, other);
    expect(differences).toEqual(['host "rig" then, "rig2" now', 'device "NVIDIA H100 80GB HBM3" then, "NVIDIA GeForce RTX 4090" now']);
    expect(conditionDifferences(env, { ...env })).toEqual([]);
    expect(gateVerdict(SAVED, scaled(0.8), 0.05, differences)).toMatchObject({ outcome: 'undecided', exitCode: 2, text: expect.stringMatching(/^could not decide: the saved run was measured under other conditions \(host/) });
  });
});
