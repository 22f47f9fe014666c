// optim.impl through the probe (issue 28): the script's optimizer made with foreach= or fused= without a
// change to the script, on both PyTorch versions: applied and reported where torch offers it, refused by
// name (the class, the torch version) where it does not, never silently dropped.
import { describe, expect, it } from 'vitest';

import type { Interpreter } from './probe-run';
import { fixtureReport, INTERPRETERS, kindOf, runProbed, TORCH1, TORCH2 } from './probe-run';
import { SCRIPTS } from './script-helpers';

const SCRIPT = `${SCRIPTS}/optim_impl.py`;

/** Runs the fixture under the probe; SET becomes the overrides the launcher would pass (TB_PROBE_SET). */
function run(python: string, { SET, ...env }: Record<string, string>) {
  return runProbed([python, SCRIPT], { env: SET ? { ...env, TB_PROBE_SET: SET } : env });
}

describe.each(INTERPRETERS)('optim.impl on $label', (t: Interpreter) => {
  it.skipIf(!t.python)('reports each optimizer the script makes, with what its torch offers and what it steps with', async () => {
    const r = await run(t.python!, { OPTIM: 'adamw' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.invalid).toEqual([]);
    const [made] = kindOf(r.processes[0], 'optimizer');
    expect(made).toMatchObject({ class: 'AdamW', impl: 'default' });
    expect(made.where).toMatch(/optim_impl\.py:\d+$/);
    // torch 2.x's AdamW takes both; Debian's 1.13 only foreach.
    expect(made.offers).toEqual(t === TORCH1 ? ['foreach'] : ['foreach', 'fused']);
  });

  it.skipIf(!t.python)('foreach: applied to the script’s AdamW, and to a subclass that passes its keywords on', async () => {
    for (const OPTIM of ['adamw', 'myadam']) {
      const r = await run(t.python!, { OPTIM, SET: JSON.stringify({ 'optim.impl': 'foreach' }) });
      expect(r.code, r.stderr).toBe(0);
      expect(fixtureReport<{ foreach: boolean }>(r.stdout).foreach).toBe(true);
      expect(kindOf(r.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'optim.impl', value: 'foreach' })]);
      expect(kindOf(r.processes[0], 'optimizer')[0]).toMatchObject({ class: OPTIM === 'adamw' ? 'AdamW' : 'MyAdam', impl: 'foreach' });
    }
  });
});

describe('optim.impl=fused', () => {
  it.skipIf(!TORCH2.python)(`torch 2.x: the script's AdamW steps fused on the CPU, its own foreach=True giving way (${TORCH2.label})`, async () => {
    const r = await run(TORCH2.python!, { OPTIM: 'adamw', SCRIPT_FOREACH: '1', SET: JSON.stringify({ 'optim.impl': 'fused' }) });
    expect(r.code, r.stderr).toBe(0);
    expect(fixtureReport<{ fused: boolean; foreach: boolean }>(r.stdout)).toMatchObject({ fused: true, foreach: false });
    expect(kindOf(r.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'optim.impl', value: 'fused' })]);
  });

  it(`torch 1.13: refused by name, the class and the torch version, and the script stops (${TORCH1.label})`, async () => {
    const r = await run(TORCH1.python!, { OPTIM: 'adamw', SET: JSON.stringify({ 'optim.impl': 'fused' }) });
    expect(r.code).not.toBe(0);
    const [error] = kindOf(r.processes[0], 'error');
    expect(error.message).toMatch(/^override optim\.impl="fused" could not be applied to the optimizer made at .*optim_impl\.py:\d+: AdamW takes no fused= argument in torch 1\.13/);
  });
});

describe('optim.set_to_none', () => {
  it(`torch 1.13: reports zero_grad() writing zeros, and drops the gradients with the override (${TORCH1.label})`, async () => {
    const plain = await run(TORCH1.python!, { OPTIM: 'sgd' });
    expect(plain.code, plain.stderr).toBe(0);
    expect(kindOf(plain.processes[0], 'zeroGrad')).toEqual([{ type: 'zeroGrad', setToNone: false, where: expect.stringMatching(/optim_impl\.py:\d+$/) }]);
    expect(fixtureReport<{ gradIsNone: boolean }>(plain.stdout).gradIsNone).toBe(false);
    const forced = await run(TORCH1.python!, { OPTIM: 'sgd', SET: JSON.stringify({ 'optim.set_to_none': true }) });
    expect(forced.code, forced.stderr).toBe(0);
    expect(kindOf(forced.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'optim.set_to_none', value: true })]);
    expect(fixtureReport<{ gradIsNone: boolean }>(forced.stdout).gradIsNone).toBe(true);
  });

  it.skipIf(!TORCH2.python)(`torch 2.x: zero_grad() drops the gradients already, and says so (${TORCH2.label})`, async () => {
    const r = await run(TORCH2.python!, { OPTIM: 'sgd' });
    expect(r.code, r.stderr).toBe(0);
    expect(kindOf(r.processes[0], 'zeroGrad')).toEqual([expect.objectContaining({ setToNone: true })]);
  });
});
