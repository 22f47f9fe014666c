// amp.dtype, memory.channels_last and compile.mode through the probe (issue 28), on a CNN tutorial script left as it is:
// the model the optimizer trains runs under autocast (its outputs back in float32), fp16 scales the loss,
// unscales before the script's clipping and counts skipped steps; channels_last converts the model; a
// script that autocasts on its own is reported, and refused rather than wrapped twice; a torch without
// the kernel or the scaler is refused by name. Real runs on Fashion-MNIST, on both PyTorch versions.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import type { Interpreter } from './probe-run';
import { fixtureReport, INTERPRETERS, kindOf, runProbed, TORCH1, TORCH2 } from './probe-run';
import { SCRIPTS } from './script-helpers';

const SCRIPT = `${SCRIPTS}/cnn_tutorial.py`;

interface Seen {
  conv_dtype: string;
  conv_channels_last: boolean;
  output_dtype: string;
  weights_channels_last: boolean;
  losses: number[];
  norms: number[];
  steps: number;
}

function run(python: string, { SET, ...env }: Record<string, string>, args: string[] = ['--steps', '12']) {
  return runProbed([python, SCRIPT, ...args], { env: SET ? { ...env, TB_PROBE_SET: SET } : env });
}

const set = (o: Record<string, unknown>) => JSON.stringify(o);
const finite = (xs: number[]) => xs.every((x) => Number.isFinite(x));

describe.each(INTERPRETERS)('amp and channels_last on $label', (t: Interpreter) => {
  it.skipIf(!t.python)('reports the model the optimizer trains (its convolutions, its device); nothing changes without an override', async () => {
    const r = await run(t.python!, { TWO_MODELS: '1' });
    expect(r.code, r.stderr).toBe(0);
    expect(r.invalid).toEqual([]);
    expect(kindOf(r.processes[0], 'model')).toEqual([
      { type: 'model', class: 'Net', convs: 2, device: 'cpu' },
      { type: 'model', class: 'Net', convs: 2, device: 'cpu' },
    ]);
    expect(kindOf(r.processes[0], 'autocast')).toEqual([]);
    expect(fixtureReport<Seen>(r.stdout)).toMatchObject({ conv_dtype: 'float32', output_dtype: 'float32', conv_channels_last: false, steps: 24 });
  });

  it.skipIf(!t.python)('amp.dtype=bf16: the forward computes in bfloat16, the script gets float32 outputs, the loss stays finite', async () => {
    const r = await run(t.python!, { SET: set({ 'amp.dtype': 'bf16' }) });
    expect(r.code, r.stderr).toBe(0);
    const seen = fixtureReport<Seen>(r.stdout);
    expect(seen).toMatchObject({ conv_dtype: 'bfloat16', output_dtype: 'float32' });
    expect(finite(seen.losses)).toBe(true);
    expect(kindOf(r.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'amp.dtype', value: 'bf16', where: 'model Net' })]);
    expect(kindOf(r.processes[0], 'amp')).toEqual([{ type: 'amp', dtype: 'bf16', skippedSteps: 0 }]);
  });

  it.skipIf(!t.python)('a copy of the model (copy.deepcopy, an EMA) runs its own forward, under the same autocast', async () => {
    const r = await run(t.python!, { EMA: '1', SET: set({ 'amp.dtype': 'bf16' }) });
    expect(r.code, r.stderr).toBe(0);
    expect(fixtureReport<Seen & { ema_output_zero: boolean; ema_conv_dtype: string; ema_output_dtype: string }>(r.stdout)).toMatchObject({
      ema_output_zero: true,
      ema_conv_dtype: 'bfloat16',
      ema_output_dtype: 'float32',
    });
  });

  it.skipIf(!t.python)("torch.save(model), probed and under amp.dtype, saves the script's own model: it loads and runs without the probe", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tb-save-'));
    try {
      for (const env of [{}, { SET: set({ 'amp.dtype': 'bf16', 'memory.channels_last': true }) }] as Record<string, string>[]) {
        const file = path.join(dir, 'model.pt');
        const r = await run(t.python!, { SAVE: file, ...env });
        expect(r.code, r.stderr).toBe(0);
        expect(readFileSync(file).includes('trainbench')).toBe(false);
        const load = [
          'import sys, torch, __main__',
          `sys.path.insert(0, ${JSON.stringify(SCRIPTS)})`,
          'from cnn_tutorial import Net',
          '__main__.Net = Net',
          `m = torch.load(${JSON.stringify(file)}, weights_only=False)`,
          'print(str(m(torch.zeros(2, 1, 28, 28)).dtype), type(m.forward).__name__)',
        ].join('\n');
        // A plain interpreter: no probe on its path.
        expect(execFileSync(t.python!, ['-c', load], { encoding: 'utf8' }).trim()).toBe('torch.float32 method');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // Four Python processes importing torch: 11 s alone, over vitest's 30 s default beside the other files on 2 cores.
  }, 120_000);

  it.skipIf(!t.python)('memory.channels_last: the convolutions run channels_last (weights and activations)', async () => {
    const r = await run(t.python!, { SET: set({ 'memory.channels_last': true }) });
    expect(r.code, r.stderr).toBe(0);
    expect(fixtureReport<Seen>(r.stdout)).toMatchObject({ weights_channels_last: true, conv_channels_last: true, conv_dtype: 'float32' });
    expect(kindOf(r.processes[0], 'applied')).toEqual([expect.objectContaining({ key: 'memory.channels_last', value: true })]);
  });

  it.skipIf(!t.python)('a script under its own autocast is reported; amp.dtype on it is refused, never wrapped twice', async () => {
    const own = await run(t.python!, { OWN_AUTOCAST: '1' });
    expect(own.code, own.stderr).toBe(0);
    expect(kindOf(own.processes[0], 'autocast')).toEqual([{ type: 'autocast', dtype: 'bf16', device: 'cpu' }]);
    const twice = await run(t.python!, { OWN_AUTOCAST: '1', SET: set({ 'amp.dtype': 'bf16' }) });
    expect(twice.code).not.toBe(0);
    expect(kindOf(twice.processes[0], 'error')[0].message).toBe(
      'override amp.dtype="bf16" could not be applied to the model Net: the script runs it under its own autocast (bf16) already: wrapping it again would change nothing',
    );
  });
});

describe('amp.dtype=fp16 (loss scaling)', () => {
  it.skipIf(!TORCH2.python)(`scales the loss, unscales before the script's clip_grad_norm_, steps through the scaler (${TORCH2.label})`, async () => {
    const r = await run(TORCH2.python!, { CLIP: '1', TWO_MODELS: '1', SET: set({ 'amp.dtype': 'fp16' }) });
    expect(r.code, r.stderr).toBe(0);
    const seen = fixtureReport<Seen>(r.stdout);
    expect(seen).toMatchObject({ conv_dtype: 'float16', output_dtype: 'float32', steps: 24 });
    // Clipped norms of true gradients: a scaled gradient (x65536 at the start) would show here as thousands.
    expect(seen.norms.length).toBe(24);
    expect(Math.max(...seen.norms.filter(Number.isFinite))).toBeLessThan(100);
    const [amp] = kindOf(r.processes[0], 'amp');
    expect(amp).toMatchObject({ type: 'amp', dtype: 'fp16' });
    expect(amp.skippedSteps).toBeGreaterThanOrEqual(0);
    expect(amp.scale).toBeGreaterThan(1);
    // A skipped step is an iteration the probe marks skipped, not a lost one: 12 iterations either way.
    const steps = kindOf(r.processes[0], 'step');
    expect(steps.length).toBe(12);
    expect(steps.filter((s) => s.skipped).length).toBeLessThanOrEqual(Number(amp.skippedSteps));
  });

  it.skipIf(!TORCH2.python)(`refuses an optimizer stepped with a closure, which GradScaler cannot step, naming it (${TORCH2.label})`, async () => {
    const r = await runProbed([TORCH2.python!, `${SCRIPTS}/probe_loops.py`, 'closure'], { env: { TB_PROBE_SET: set({ 'amp.dtype': 'fp16' }) } });
    expect(r.code).not.toBe(0);
    expect(kindOf(r.processes[0], 'error')[0].message).toBe('override amp.dtype="fp16" could not be applied to the model: SGD.step() takes a closure, which GradScaler cannot step');
  });

  it(`torch 1.13 on the CPU: refused by name, the version and why (${TORCH1.label})`, async () => {
    const r = await run(TORCH1.python!, { SET: set({ 'amp.dtype': 'fp16' }) });
    expect(r.code).not.toBe(0);
    expect(kindOf(r.processes[0], 'error')[0].message).toMatch(
      /^override amp\.dtype="fp16" could not be applied to the model Net: torch 1\.13\S* refused autocast on cpu: Currently, AutocastCPU only support Bfloat16/,
    );
  });

  it('channels_last on a model without convolutions is refused, naming the model', async () => {
    const r = await runProbed([TORCH1.python!, `${SCRIPTS}/optim_impl.py`], { env: { TB_PROBE_SET: set({ 'memory.channels_last': true }) } });
    expect(r.code).not.toBe(0);
    expect(kindOf(r.processes[0], 'error')[0].message).toBe(
      'override memory.channels_last=true could not be applied to the model Sequential: it has no 2-D convolution, so channels_last changes nothing for it',
    );
  });
});

describe('compile.mode', () => {
  it.skipIf(!TORCH2.python)(`compiles the model in place, times each compilation and counts those in the measured steps (${TORCH2.label})`, async () => {
    const r = await runProbed([TORCH2.python!, SCRIPT, '--steps', '12'], {
      env: { TB_PROBE_SET: set({ 'compile.mode': 'default', 'amp.dtype': 'bf16' }), TB_PROBE_WARMUP: '3' },
      timeoutMs: 300_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.invalid).toEqual([]);
    const seen = fixtureReport<Seen>(r.stdout);
    expect(seen).toMatchObject({ conv_dtype: 'bfloat16', output_dtype: 'float32', steps: 12 });
    expect(finite(seen.losses)).toBe(true);
    expect(kindOf(r.processes[0], 'applied').map((m) => m.key)).toEqual(['amp.dtype', 'compile.mode']);
    const [compiled] = kindOf(r.processes[0], 'compile');
    expect(compiled).toMatchObject({ type: 'compile', mode: 'default' });
    // The forward and the backward, at the first step; the last batch (a smaller one) may recompile.
    expect(compiled.compilations).toBeGreaterThanOrEqual(2);
    expect(compiled.seconds).toBeGreaterThan(0.1);
    expect(compiled.inMeasuredSteps).toBeLessThanOrEqual(Number(compiled.compilations));
    expect(kindOf(r.processes[0], 'step')).toHaveLength(12);
  }, 300_000);

  it(`torch 1.13: refused, naming the version (${TORCH1.label})`, async () => {
    const r = await run(TORCH1.python!, { SET: set({ 'compile.mode': 'default' }) });
    expect(r.code).not.toBe(0);
    expect(kindOf(r.processes[0], 'error')[0].message).toMatch(/^override compile\.mode="default" could not be applied to the model Net: torch\.compile needs torch 2\.0 or newer; this is torch 1\.13/);
  });
});
