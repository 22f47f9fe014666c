// Issue 25: every knob of the optimisation wizard is one row of the knob table, and every list the wizards use comes from it.
import { describe, expect, it } from 'vitest';

import { BenchmarkOptionsSchema } from '../../src-main/api/benchmark';
import type { OptimiseBaseline, OptimiseChange, OptimiseConfig } from '../../src-main/api/optimise';
import { DiagnosisSchema } from '../../src-main/api/optimise';
import type { ScriptOverrides } from '../../src-main/api/script-target';
import { SCRIPT_OVERRIDE_KEYS, ScriptOverridesSchema } from '../../src-main/api/script-target';
import type { KnobContext, ScriptKnobContext } from '../../src-main/core/knobs/knob';
import { KNOB_TARGETS, offered, toProposal } from '../../src-main/core/knobs/knob';
import { ENGINE_KNOBS, engineOrder, KNOB_TABLE, notOfferedOn, SCRIPT_KNOBS, SCRIPT_KNOBS_IN_ORDER, scriptOrder, scriptProposals } from '../../src-main/core/knobs/knob-table';
import { scriptBound, scriptBoundText } from '../../src-main/core/knobs/diagnosis';
import { diagnose } from '../../src-main/core/knobs/diagnosis';
import { applyChange, candidateChanges } from '../../src-main/core/knobs/engine-knobs';

const BOUNDS = DiagnosisSchema.shape.bound.options;

const config = (o: object = {}, readFrom: 'cache' | 'source' = 'cache'): OptimiseConfig => ({ options: BenchmarkOptionsSchema.parse(o), readFrom });

/** A measured-looking baseline whose phases (ms per step) are given. */
function baseline(phasesMs: Record<string, number>, device: string): OptimiseBaseline {
  const phases = { data: 0, h2d: 0, forward: 0, loss: 0, backward: 0, optimizer: 0, other: 0, ...phasesMs };
  const step = Object.values(phases).reduce((a, b) => a + b, 0);
  const percent = Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, (100 * v) / step])) as typeof phases;
  const cuda = device.startsWith('cuda');
  return {
    config: config(),
    samplesPerSec: { low: 900, median: 1000, high: 1100 },
    repetitions: [950, 1000, 1050, 990, 1010],
    noiseFloor: 0.02,
    stepMs: step,
    phasesMs: phases,
    phasesPercent: percent,
    device,
    cpuMean: 97,
    gpuUtilizationMean: cuda ? 60 : null,
    memoryBytes: 1e8,
    deviceTotalBytes: cuda ? 8e10 : null,
    meanLoss: 1.5,
  };
}

const DIAGNOSES = {
  'loader-bound': (device: string) => diagnose(baseline({ data: 6, forward: 2, backward: 1.5, optimizer: 0.5 }, device)),
  'copy-bound': (device: string) => diagnose(baseline({ data: 0.5, h2d: 6, forward: 2, backward: 1.5 }, device)),
  'compute-bound': (device: string) => diagnose(baseline({ data: 0.5, forward: 40, loss: 1, backward: 55, optimizer: 3, other: 0.5 }, device)),
};

const ENGINE_CONTEXTS: Record<string, KnobContext> = {
  'CPU, 2 cores': { device: 'cpu', cpus: 2, recordsPerEpoch: 60_000 },
  'CUDA, 16 cores, searched batch': { device: 'cuda:0', cpus: 16, recordsPerEpoch: 60_000, searchedBatch: 256 },
  'CUDA, a small epoch': { device: 'cuda:0', cpus: 16, recordsPerEpoch: 100 },
};

const ENGINE_CONFIGS: Record<string, OptimiseConfig> = {
  defaults: config(),
  'reading the source, no workers': config({ loaderWorkers: 0, prefetch: 1 }, 'source'),
  'tuned to the limits': config({ loaderWorkers: 16, prefetch: 16, gpuPrefetch: 8, precision: 'bf16', cudaGraph: true, batchSize: 256 }),
  accumulating: config({ accumulation: 4 }),
};

const SCRIPT_CONTEXTS: Record<string, ScriptKnobContext> = {
  'CPU, no DataLoader or optimizer seen': { device: 'cpu', cpus: 2, loader: null, optimizer: null, models: [], autocast: null, torch: null, zeroGradToNone: null, ddp: null, bound: 'data' },
  'CPU, num_workers 0, AdamW on torch 1.13': {
    device: 'cpu',
    cpus: 4,
    loader: { num_workers: 0, prefetch_factor: null, pin_memory: false, persistent_workers: false, batch_size: 32 },
    optimizer: { class: 'AdamW', offers: ['foreach'], impl: 'default', torch: '1.13.0' },
    models: [{ class: 'NeuralNetwork', convs: 0, bf16: null }],
    autocast: null,
    torch: '1.13.0',
    zeroGradToNone: false,
    ddp: null,
    bound: 'data',
  },
  'CPU, SGD stepping foreach on torch 1.13': {
    device: 'cpu',
    cpus: 4,
    loader: null,
    optimizer: { class: 'SGD', offers: ['foreach'], impl: 'foreach', torch: '1.13.0' },
    models: [{ class: 'Net', convs: 2, bf16: null }],
    autocast: null,
    torch: '1.13.0',
    zeroGradToNone: false,
    ddp: null,
    bound: 'data',
  },
  'CUDA, 4 workers pinned, AdamW on torch 2.x': {
    device: 'cuda:0',
    cpus: 16,
    loader: { num_workers: 4, prefetch_factor: 2, pin_memory: true, persistent_workers: false, batch_size: 128 },
    optimizer: { class: 'AdamW', offers: ['foreach', 'fused'], impl: 'default', torch: '2.13.0' },
    models: [{ class: 'ResNet', convs: 20, bf16: true }],
    autocast: null,
    torch: '2.13.0',
    zeroGradToNone: true,
    ddp: null,
    bound: 'compute',
  },
  'CUDA, DDP over 4 ranks with its default buckets, torch 2.x': {
    device: 'cuda:0',
    cpus: 32,
    loader: { num_workers: 8, prefetch_factor: 2, pin_memory: true, persistent_workers: true, batch_size: 64 },
    optimizer: { class: 'AdamW', offers: ['foreach', 'fused'], impl: 'fused', torch: '2.13.0' },
    models: [{ class: 'GPT', convs: 0, bf16: true }],
    autocast: 'bf16',
    torch: '2.13.0',
    zeroGradToNone: true,
    ddp: { bucketCapMb: 25, gradientAsBucketView: false, staticGraph: false, ranks: 4 },
    bound: 'compute',
  },
  'CUDA without bf16, the script under its own autocast': {
    device: 'cuda:0',
    cpus: 8,
    loader: null,
    optimizer: { class: 'SGD', offers: ['foreach', 'fused'], impl: 'default', torch: '2.13.0' },
    models: [{ class: 'Net', convs: 2, bf16: false }],
    autocast: 'fp16',
    torch: '2.13.0',
    zeroGradToNone: true,
    ddp: null,
    bound: 'compute',
  },
};

const SCRIPT_OVERRIDES: Record<string, ScriptOverrides> = {
  none: {},
  'at the limits': {
    'dataloader.num_workers': 16,
    'dataloader.prefetch_factor': 16,
    'cudnn.benchmark': true,
    'matmul.precision': 'high',
    'optim.impl': 'fused',
    'amp.dtype': 'bf16',
    'memory.channels_last': true,
    'compile.mode': 'default',
    'optim.set_to_none': true,
    'copy.non_blocking': true,
  },
};

/** Each case of a target: every offered setting's outcome, as the wizard derives it. */
type Outcome = { proposed: OptimiseChange } | { skipped: OptimiseChange; why: string } | { settled: string };

function engineOutcomes(c: OptimiseConfig, diagnosis: ReturnType<typeof diagnose>, ctx: KnobContext): Map<string, Outcome[]> {
  const out = new Map<string, Outcome[]>();
  const add = (knob: string, o: Outcome) => out.set(knob, [...(out.get(knob) ?? []), o]);
  const found = candidateChanges(c, diagnosis, ctx);
  for (const change of found.changes) add(change.knob, { proposed: change });
  for (const s of found.skipped) add(s.change.knob, { skipped: s.change, why: s.why });
  // What the wizard leaves out of both lists: asked of the proposer itself, which must say why.
  for (const knob of ENGINE_KNOBS) {
    const p = toProposal(knob.setting, knob.kind, knob.propose(c, ctx));
    if ('settled' in p) add(knob.setting, p);
  }
  return out;
}

function scriptOutcomes(o: ScriptOverrides, ctx: ScriptKnobContext): Map<string, Outcome[]> {
  const out = new Map<string, Outcome[]>();
  SCRIPT_KNOBS.forEach((propose, i) => {
    const p = propose(o, ctx);
    const setting = SCRIPT_KNOBS_IN_ORDER[i].setting;
    const outcome: Outcome = 'change' in p ? { proposed: p.change } : 'skip' in p ? { skipped: p.skip, why: p.why } : p;
    out.set(setting, [...(out.get(setting) ?? []), outcome]);
  });
  return out;
}

const engineSettings = () => ENGINE_KNOBS.map((k) => k.setting);
const scriptSettings = () => SCRIPT_KNOBS_IN_ORDER.map((k) => k.setting as string);
const kindOf = (target: 'engine' | 'script', setting: string) => KNOB_TABLE.find((k) => {
  const offer = k[target];
  return offered(offer) && offer.setting === setting;
})?.kind;

function expectEveryKnobAnswered(outcomes: Map<string, Outcome[]>, target: 'engine' | 'script', settings: string[]) {
  expect([...outcomes.keys()].sort()).toEqual([...settings].sort());
  for (const [setting, list] of outcomes) {
    expect(list, `${target} ${setting} answered once`).toHaveLength(1);
    const o = list[0];
    if ('settled' in o) expect(o.settled.trim(), `${target} ${setting} settled with a reason`).not.toBe('');
    else if ('skipped' in o) expect(o.why.trim(), `${target} ${setting} skipped with a reason`).not.toBe('');
    const change = 'proposed' in o ? o.proposed : 'skipped' in o ? o.skipped : null;
    if (change) {
      expect(change.knob).toBe(setting);
      expect(change.kind, `${target} ${setting}'s kind is its row's`).toBe(kindOf(target, setting));
      expect(change.label.trim()).not.toBe('');
      expect(change.hypothesis.trim()).not.toBe('');
    }
  }
}

describe('the knob table', () => {
  it('declares each knob once, and each target setting once', () => {
    const names = KNOB_TABLE.map((k) => k.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(engineSettings()).size).toBe(ENGINE_KNOBS.length);
    expect(new Set(scriptSettings()).size).toBe(SCRIPT_KNOBS_IN_ORDER.length);
    for (const bound of BOUNDS) expect(new Set(ENGINE_KNOBS.map((k) => k.rank[bound])).size, `engine ranks for ${bound}`).toBe(ENGINE_KNOBS.length);
    for (const bound of ['data', 'compute', 'communication'] as const) expect(new Set(SCRIPT_KNOBS_IN_ORDER.map((k) => k.rank[bound])).size, `script ranks for ${bound}`).toBe(SCRIPT_KNOBS_IN_ORDER.length);
  });

  it('has every knob offered somewhere, and a reason on each target that does not offer it', () => {
    for (const k of KNOB_TABLE) expect(KNOB_TARGETS.some((t) => offered(k[t])), k.name).toBe(true);
    for (const target of KNOB_TARGETS) {
      const absent = notOfferedOn(target);
      for (const { name, why } of absent) expect(why.trim(), `${name} on ${target}`).not.toBe('');
      const offeredCount = target === 'engine' ? ENGINE_KNOBS.length : SCRIPT_KNOBS_IN_ORDER.length;
      expect(absent.length + offeredCount).toBe(KNOB_TABLE.length);
    }
  });

  it('names only settings the target has', () => {
    for (const setting of scriptSettings()) expect(SCRIPT_OVERRIDE_KEYS).toContain(setting);
    const c = config();
    // pinnedMemory is declared to say why it is never tried: the engine always pins.
    for (const setting of engineSettings().filter((s) => s !== 'pinnedMemory')) expect(setting === 'readFrom' || setting in c.options, setting).toBe(true);
  });
});

describe('the lists derived from it', () => {
  it('orders every engine knob exactly once for every diagnosis, by its rank', () => {
    for (const bound of BOUNDS) {
      const order = engineOrder(bound);
      expect(order.map((k) => k.setting).sort()).toEqual(engineSettings().sort());
      const ranks = order.map((k) => k.rank[bound]);
      expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    }
  });

  it('a data wait puts the loader first, and the knobs that never apply last', () => {
    expect(engineOrder('data').map((k) => k.setting)).toEqual(['readFrom', 'loaderWorkers', 'prefetch', 'gpuPrefetch', 'pinnedMemory', 'batchSize', 'precision', 'cudaGraph', 'accumulation', 'sampleRatio']);
    for (const bound of BOUNDS) expect(engineOrder(bound).slice(-2).map((k) => k.setting)).toEqual(['accumulation', 'sampleRatio']);
  });

  it("gives the script wizard one proposer per script knob, in the table's order", () => {
    expect(SCRIPT_KNOBS).toHaveLength(SCRIPT_KNOBS_IN_ORDER.length);
    const ranks = SCRIPT_KNOBS_IN_ORDER.map((k) => k.rank.data);
    expect(ranks).toEqual([...ranks].sort((a, b) => a - b));
    const ctx = SCRIPT_CONTEXTS['CUDA, 4 workers pinned, AdamW on torch 2.x'];
    SCRIPT_KNOBS.forEach((propose, i) => {
      const p = propose({}, ctx);
      if (!('settled' in p)) expect('change' in p ? p.change.knob : p.skip.knob).toBe(SCRIPT_KNOBS_IN_ORDER[i].setting);
    });
  });
});

describe("the script's order follows what bounds its step (issue 28)", () => {
  it('a data-bound script tries its loader first; a compute-bound one its model first, the loader after', () => {
    expect(scriptOrder('data').map((k) => k.setting)).toEqual([
      'dataloader.num_workers',
      'dataloader.prefetch_factor',
      'dataloader.pin_memory',
      'copy.non_blocking',
      'cudnn.benchmark',
      'amp.dtype',
      'memory.channels_last',
      'compile.mode',
      'matmul.precision',
      'optim.impl',
      'optim.set_to_none',
      'ddp.bucket_cap_mb',
      'ddp.gradient_as_bucket_view',
      'ddp.static_graph',
      'dataloader.batch_size',
      'dataloader.persistent_workers',
    ]);
    expect(scriptOrder('compute').map((k) => k.setting)).toEqual([
      'amp.dtype',
      'matmul.precision',
      'compile.mode',
      'memory.channels_last',
      'cudnn.benchmark',
      'optim.impl',
      'optim.set_to_none',
      'ddp.bucket_cap_mb',
      'ddp.gradient_as_bucket_view',
      'ddp.static_graph',
      'dataloader.batch_size',
      'dataloader.num_workers',
      'dataloader.prefetch_factor',
      'dataloader.pin_memory',
      'copy.non_blocking',
      'dataloader.persistent_workers',
    ]);
  });

  it('a job of several ranks waiting in its all-reduces tries DDP\'s settings first, then the loader, then the model (issue 40)', () => {
    expect(scriptOrder('communication').map((k) => k.setting)).toEqual([
      'ddp.bucket_cap_mb',
      'ddp.gradient_as_bucket_view',
      'ddp.static_graph',
      'dataloader.num_workers',
      'dataloader.prefetch_factor',
      'dataloader.pin_memory',
      'copy.non_blocking',
      'amp.dtype',
      'matmul.precision',
      'compile.mode',
      'memory.channels_last',
      'cudnn.benchmark',
      'optim.impl',
      'optim.set_to_none',
      'dataloader.batch_size',
      'dataloader.persistent_workers',
    ]);
    const waiting = { phasesPercent: { data: 4 }, collectives: { exposedShare: 0.6, straggler: null, phase: null } };
    expect(scriptBound(waiting)).toBe('communication');
    expect(scriptBoundText(waiting)).toBe(
      "data wait 4.0% of the step (at most 10%); 60.0% of it waits in all-reduces after the last rank arrived (over 10%): communication sets the pace, so DDP's settings are tried first",
    );
    // The data wait comes first: a loader-bound rank makes the others wait at the all-reduce too.
    expect(scriptBound({ ...waiting, phasesPercent: { data: 30 } })).toBe('data');
    const late = { phasesPercent: { data: 4 }, collectives: { exposedShare: 0.08, straggler: 1, phase: 'host' as const } };
    expect(scriptBound(late)).toBe('compute');
    expect(scriptBoundText(late)).toBe(
      'data wait 4.0% of the step (at most 10%); 8.0% of it waits in all-reduces after the last rank arrived: the compute sets the pace, so the model\'s settings (mixed precision, compile, channels_last) are tried first; rank 1 is the straggler, late in host work',
    );
  });

  it("takes the bound from the baseline's data wait, at the engine diagnosis's threshold", () => {
    expect(scriptBound({ phasesPercent: { data: 13 } })).toBe('data');
    expect(scriptBound({ phasesPercent: { data: 10 } })).toBe('compute');
    expect(scriptBoundText({ phasesPercent: { data: 4.2 } })).toBe(
      'data wait 4.2% of the step (at most 10%): the compute sets the pace, so the model\'s settings (mixed precision, compile, channels_last) are tried first',
    );
  });

  it('the runner proposes in that order', () => {
    const ctx = SCRIPT_CONTEXTS['CUDA, 4 workers pinned, AdamW on torch 2.x'];
    const proposed = (bound: 'data' | 'compute') => scriptProposals({}, { ...ctx, bound }).flatMap((p) => ('change' in p ? [p.change.knob] : []));
    expect(proposed('compute')[0]).toBe('amp.dtype');
    expect(proposed('data')[0]).toBe('dataloader.num_workers');
  });
});

describe('script proposals stay within what Trainbench sets (re-attack 11)', () => {
  it('skips, with why, a change past an override\'s range that a planted loader (or a large script) would propose', () => {
    const base = SCRIPT_CONTEXTS['CPU, num_workers 0, AdamW on torch 1.13'];
    for (const batch of [2 ** 40, -3]) {
      const ctx = { ...base, loader: { ...base.loader!, batch_size: batch } };
      const batchSize = scriptProposals({}, ctx).find((p) => ('change' in p ? p.change : 'skip' in p ? p.skip : null)?.knob === 'dataloader.batch_size');
      expect(batchSize && 'change' in batchSize, `batch ${batch}`).toBe(false);
      if (batchSize && 'skip' in batchSize) expect(batchSize.why).toMatch(/^dataloader\.batch_size -?\d+ is outside what Trainbench sets \(/);
    }
    // Every change proposed for the script as it is passes the overrides' schema.
    for (const p of scriptProposals({}, base)) if ('change' in p) expect(ScriptOverridesSchema.safeParse({ [p.change.knob]: p.change.to }).success, p.change.label).toBe(true);
  });
});

describe('optim.impl on a script (issue 28)', () => {
  const answer = (name: string, o: ScriptOverrides = {}) => scriptOutcomes(o, SCRIPT_CONTEXTS[name]).get('optim.impl')![0];

  it('proposes the fused update where the torch offers it, else foreach, and says why not otherwise', () => {
    expect(answer('CUDA, 4 workers pinned, AdamW on torch 2.x')).toMatchObject({ proposed: { from: 'default', to: 'fused', kind: 'pipeline' } });
    expect(answer('CPU, num_workers 0, AdamW on torch 1.13')).toMatchObject({ proposed: { from: 'default', to: 'foreach' } });
    expect(answer('CPU, SGD stepping foreach on torch 1.13')).toEqual({ skipped: expect.objectContaining({ to: 'fused' }), why: 'SGD takes no fused= argument in torch 1.13.0' });
    expect(answer('CPU, num_workers 0, AdamW on torch 1.13', { 'optim.impl': 'foreach' })).toMatchObject({ why: 'AdamW takes no fused= argument in torch 1.13.0' });
    expect(answer('CUDA, 4 workers pinned, AdamW on torch 2.x', { 'optim.impl': 'fused' })).toEqual({ settled: 'AdamW steps fused already' });
    expect(answer('CPU, no DataLoader or optimizer seen')).toEqual({ settled: 'the probe has seen no optimizer the script made' });
  });
});

describe('DistributedDataParallel on a job of several ranks (issue 40)', () => {
  const DDP = SCRIPT_CONTEXTS['CUDA, DDP over 4 ranks with its default buckets, torch 2.x'];
  const answer = (setting: string, o: ScriptOverrides = {}, ctx = DDP) => scriptOutcomes(o, ctx).get(setting)![0];

  it('grows the gradient buckets four times a step up to 200 MB, from the size the script made them', () => {
    expect(answer('ddp.bucket_cap_mb')).toMatchObject({ proposed: { from: 25, to: 100, kind: 'pipeline', label: 'gradient buckets 25 -> 100 MB' } });
    expect(answer('ddp.bucket_cap_mb', { 'ddp.bucket_cap_mb': 100 })).toMatchObject({ proposed: { from: 100, to: 200 } });
    expect(answer('ddp.bucket_cap_mb', { 'ddp.bucket_cap_mb': 200 })).toEqual({ settled: "DDP's gradient buckets are 200 MB already" });
    // A script's own half-megabyte buckets: a whole number of MB, as the override takes it.
    expect(answer('ddp.bucket_cap_mb', {}, { ...DDP, ddp: { ...DDP.ddp!, bucketCapMb: 0.5 } })).toMatchObject({ proposed: { from: 0.5, to: 2 } });
    expect((answer('ddp.bucket_cap_mb') as { proposed: { hypothesis: string } }).proposed.hypothesis).toContain("the job's 4 ranks");
  });

  it('turns gradient views and the static graph on where the script has them off, the static graph with its caveat', () => {
    expect(answer('ddp.gradient_as_bucket_view')).toMatchObject({ proposed: { from: false, to: true, kind: 'pipeline' } });
    expect(answer('ddp.gradient_as_bucket_view', { 'ddp.gradient_as_bucket_view': true })).toEqual({ settled: "DDP's gradients are views of its buckets already" });
    expect(answer('ddp.static_graph')).toMatchObject({ proposed: { from: false, to: true, note: expect.stringContaining('the loss guard rejects it') } });
    expect(answer('ddp.static_graph', {}, { ...DDP, ddp: { ...DDP.ddp!, staticGraph: true } })).toEqual({ settled: 'DDP knows the graph is static already' });
  });

  it('offers none of them without a DDP model, or with one rank, and says which', () => {
    const single = { ...DDP, ddp: { ...DDP.ddp!, ranks: 1 } };
    for (const setting of ['ddp.bucket_cap_mb', 'ddp.gradient_as_bucket_view', 'ddp.static_graph']) {
      expect(answer(setting, {}, single)).toEqual({ settled: 'the job runs one rank: DDP has no gradients to all-reduce' });
      expect(answer(setting, {}, SCRIPT_CONTEXTS['CUDA, 4 workers pinned, AdamW on torch 2.x'])).toEqual({
        settled: 'the probe saw no DistributedDataParallel model: the script runs as one process, or syncs its gradients its own way',
      });
    }
  });
});

describe('every declared knob is proposed, or not, with a reason', () => {
  for (const [ctxName, ctx] of Object.entries(ENGINE_CONTEXTS)) {
    for (const [configName, c] of Object.entries(ENGINE_CONFIGS)) {
      for (const [diagnosisName, diagnosisOf] of Object.entries(DIAGNOSES)) {
        it(`engine: ${ctxName}, ${configName}, ${diagnosisName}`, () => {
          const outcomes = engineOutcomes(c, diagnosisOf(ctx.device), ctx);
          expectEveryKnobAnswered(outcomes, 'engine', engineSettings());
          for (const [setting, [o]] of outcomes) if ('proposed' in o) expect(() => applyChange(c, o.proposed), setting).not.toThrow();
        });
      }
    }
  }

  for (const [ctxName, ctx] of Object.entries(SCRIPT_CONTEXTS)) {
    for (const [overridesName, o] of Object.entries(SCRIPT_OVERRIDES)) {
      it(`script: ${ctxName}, overrides ${overridesName}`, () => {
        expectEveryKnobAnswered(scriptOutcomes(o, ctx), 'script', scriptSettings());
      });
    }
  }

  it('skips what needs a GPU on the CPU, and proposes it on CUDA', () => {
    const d = DIAGNOSES['compute-bound'];
    const onCpu = engineOutcomes(config(), d('cpu'), ENGINE_CONTEXTS['CPU, 2 cores']);
    const onGpu = engineOutcomes(config(), d('cuda:0'), ENGINE_CONTEXTS['CUDA, 16 cores, searched batch']);
    for (const knob of ['precision', 'cudaGraph']) {
      expect(onCpu.get(knob)?.[0], knob).toMatchObject({ why: expect.stringContaining('this target runs on cpu') });
      expect(onGpu.get(knob)?.[0], knob).toHaveProperty('proposed');
    }
    const script = (device: string) => scriptOutcomes({}, { ...SCRIPT_CONTEXTS['CPU, num_workers 0, AdamW on torch 1.13'], device });
    for (const knob of ['dataloader.pin_memory', 'cudnn.benchmark', 'matmul.precision']) {
      expect(script('cpu').get(knob)?.[0], knob).toMatchObject({ why: expect.stringContaining('this script trains on cpu') });
      expect(script('cuda:0').get(knob)?.[0], knob).toHaveProperty('proposed');
    }
  });

  it('puts the loader knobs first for a loader-bound step and precision first for a compute-bound GPU step', () => {
    const ctx = ENGINE_CONTEXTS['CUDA, 16 cores, searched batch'];
    const c = ENGINE_CONFIGS['reading the source, no workers'];
    expect(candidateChanges(c, DIAGNOSES['loader-bound']('cuda:0'), ctx).changes.map((x) => x.knob).slice(0, 3)).toEqual(['readFrom', 'loaderWorkers', 'prefetch']);
    expect(candidateChanges(c, DIAGNOSES['compute-bound']('cuda:0'), ctx).changes[0].knob).toBe('precision');
  });
});

describe('amp.dtype, memory.channels_last and compile.mode on a script (issue 28)', () => {
  const answer = (setting: string, name: string, o: ScriptOverrides = {}, patch: Partial<ScriptKnobContext> = {}) =>
    scriptOutcomes(o, { ...SCRIPT_CONTEXTS[name], ...patch }).get(setting)![0];

  it('proposes bf16 where the GPU computes it, fp16 (with loss scaling) where it does not, and bf16 on the CPU to be measured', () => {
    expect(answer('amp.dtype', 'CUDA, 4 workers pinned, AdamW on torch 2.x')).toMatchObject({ proposed: { from: 'fp32', to: 'bf16', kind: 'numerics' } });
    expect(answer('amp.dtype', 'CUDA without bf16, the script under its own autocast', {}, { autocast: null })).toMatchObject({
      proposed: { to: 'fp16', hypothesis: expect.stringContaining('loss scaling') },
    });
    expect(answer('amp.dtype', 'CPU, num_workers 0, AdamW on torch 1.13')).toMatchObject({ proposed: { to: 'bf16', hypothesis: expect.stringContaining('measured, not assumed') } });
  });

  it('never wraps a script that autocasts on its own, nor proposes what is set, nor guesses without a model', () => {
    expect(answer('amp.dtype', 'CUDA without bf16, the script under its own autocast')).toEqual({ settled: 'the script runs its forward under its own autocast (fp16) already' });
    expect(answer('amp.dtype', 'CUDA, 4 workers pinned, AdamW on torch 2.x', { 'amp.dtype': 'bf16' })).toEqual({ settled: 'the model computes in bf16 already' });
    expect(answer('amp.dtype', 'CPU, no DataLoader or optimizer seen')).toMatchObject({ settled: expect.stringMatching(/^the probe has seen no model/) });
  });

  it('proposes channels_last for a model with convolutions, and says why not for one without', () => {
    expect(answer('memory.channels_last', 'CPU, SGD stepping foreach on torch 1.13')).toMatchObject({ proposed: { from: false, to: true, kind: 'numerics' } });
    expect(answer('memory.channels_last', 'CPU, num_workers 0, AdamW on torch 1.13')).toEqual({
      skipped: expect.objectContaining({ to: true }),
      why: 'NeuralNetwork has no 2-D convolution: channels_last changes nothing for it',
    });
    expect(answer('memory.channels_last', 'CUDA, 4 workers pinned, AdamW on torch 2.x', { 'memory.channels_last': true })).toEqual({ settled: 'the model runs channels_last already' });
  });

  it('proposes torch.compile on torch 2.x, and names the version where it cannot', () => {
    expect(answer('compile.mode', 'CUDA, 4 workers pinned, AdamW on torch 2.x')).toMatchObject({
      proposed: { from: 'off', to: 'default', kind: 'numerics', hypothesis: expect.stringContaining('after how many steps it pays off') },
    });
    expect(answer('compile.mode', 'CPU, SGD stepping foreach on torch 1.13')).toEqual({
      skipped: expect.objectContaining({ to: 'default' }),
      why: 'torch.compile needs torch 2.0 or newer; the script runs torch 1.13.0',
    });
    expect(answer('compile.mode', 'CUDA, 4 workers pinned, AdamW on torch 2.x', { 'compile.mode': 'default' })).toEqual({ settled: 'the model is compiled already (mode default)' });
  });

  it("proposes zero_grad(set_to_none=True) only where the script's zero_grad writes zeros (torch 1.13's default)", () => {
    expect(answer('optim.set_to_none', 'CPU, SGD stepping foreach on torch 1.13')).toMatchObject({ proposed: { from: false, to: true, kind: 'pipeline' } });
    expect(answer('optim.set_to_none', 'CUDA, 4 workers pinned, AdamW on torch 2.x')).toEqual({ settled: "the script's zero_grad() drops the gradients already (torch 2.x's default)" });
    expect(answer('optim.set_to_none', 'CPU, no DataLoader or optimizer seen')).toEqual({ settled: 'the probe saw no zero_grad() call in the script' });
  });

  it('proposes non-blocking copies on a CUDA script that pins its batches, and says why not elsewhere', () => {
    const cudaPinned = 'CUDA, 4 workers pinned, AdamW on torch 2.x';
    expect(answer('copy.non_blocking', cudaPinned)).toMatchObject({ proposed: { from: false, to: true, kind: 'pipeline', hypothesis: expect.stringContaining('measured, not assumed') } });
    expect(answer('copy.non_blocking', cudaPinned, { 'dataloader.pin_memory': false })).toEqual({
      skipped: expect.objectContaining({ to: true }),
      why: 'a copy from pageable memory waits whatever it is asked: pin_memory is off, so there is nothing to make non-blocking',
    });
    expect(answer('copy.non_blocking', 'CPU, num_workers 0, AdamW on torch 1.13')).toEqual({
      skipped: expect.objectContaining({ to: true }),
      why: 'a non-blocking copy overlaps a copy to a GPU; this script trains on cpu',
    });
    expect(answer('copy.non_blocking', cudaPinned, { 'copy.non_blocking': true })).toEqual({ settled: "the script's copies of pinned batches are non-blocking already" });
  });
});
