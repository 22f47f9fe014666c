// The probe's loss reader (resources/python/trainbench_probe/losses.py) on real torch tensors:
// one value per step, gradient-accumulation losses summed, a diverged loss sent as null (alone or amid finite ones),
// anything that is not one floating scalar left alone.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { INTERPRETERS } from './probe-run';

const PROGRAM = `
import json, torch
from trainbench_probe.losses import LossReader
sent = []
r = LossReader(torch, sent.append)
w = torch.ones(3, requires_grad=True)
for step in range(1, 41):
    loss = (w * step).sum() / 3          # step's loss is 'step', kept with its graph attached
    r.keep(step, loss)
    if step == 5:
        r.keep(step, (loss / 2,))        # a second backward() in the step: accumulation
    if step == 7:
        r.keep(step, torch.tensor(float("nan")))  # a step that diverged amid finite ones
    r.keep(step, torch.ones(2))          # not a scalar: ignored
    r.keep(step, torch.tensor(7))        # an integer tensor: ignored
    r.step_closed(step, (), 0.0)
r.keep(41, torch.tensor(float("inf")))
r.finish()
print(json.dumps(sent))
`;

// On both torches: a tensor of several elements makes item() raise a RuntimeError on 2.x and a ValueError on 1.13.
describe.each(INTERPRETERS)('probe loss reader on $label', (interp) => {
  it.skipIf(interp.python === null)('sends one value per step in batches, sums a step’s backward() losses and sends a non-finite loss as null', () => {
    const out = execFileSync(interp.python!, ['-c', PROGRAM], { env: { ...process.env, PYTHONPATH: path.join(REPO_ROOT, 'resources', 'python') }, encoding: 'utf8' });
    const sent = JSON.parse(out) as { type: string; steps: number[]; values: (number | null)[] }[];
    expect(sent.every((m) => m.type === 'loss')).toBe(true);
    // Batches of 32 steps (step 5's two losses are one entry), then what was left at the end.
    expect(sent.map((m) => m.steps.length)).toEqual([32, 9]);
    const values = new Map(sent.flatMap((m) => m.steps.map((s, i) => [s, m.values[i]] as const)));
    expect([...values.keys()]).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
    expect(values.get(1)).toBeCloseTo(1, 5);
    expect(values.get(5)).toBeCloseTo(7.5, 5);
    expect(values.get(7)).toBeNull();
    expect(values.get(8)).toBeCloseTo(8, 5);
    expect(values.get(40)).toBeCloseTo(40, 5);
    expect(values.get(41)).toBeNull();
  });
});
