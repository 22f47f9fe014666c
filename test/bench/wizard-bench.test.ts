// bench:wizard (issue 42): the rows' arithmetic, every committed result's shape, and, with
// TB_BENCH_WIZARD=1 (CI, on its own): all three workloads at the tiny size, the balanced preset, 2 rounds
// (about 7 minutes on 2 idle cores; both presets and 3 rounds are bench:wizard's default).
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { beforeAll, describe, expect, it } from 'vitest';

import { workloadRows, wizardSummary } from '../../bench/wizard/rows.mjs';
import type { Interval, MeasuredVariant } from '../../bench/wizard/rows.mjs';
import { REPO_ROOT, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

const RESULTS = path.join(REPO_ROOT, 'bench', 'results');
const VARIANTS = ['plain', 'wizard-balanced', 'wizard-max-speed', 'expert'];

beforeAll(requireBuilt);

function expectInterval(i: Interval, what: string) {
  for (const k of ['low', 'median', 'high'] as const) {
    expect(Number.isFinite(i[k]) && i[k] > 0, `${what}.${k} = ${i[k]}`).toBe(true);
  }
  expect(i.low, what).toBeLessThanOrEqual(i.median);
  expect(i.median, what).toBeLessThanOrEqual(i.high);
}

interface WizardResultFile {
  benchmark: string;
  device: { kind: string; name: string; torch: string };
  size: string;
  protocol: { rounds: number; repeat: number; presets: string[] };
  workloads: { name: string; skipped?: string; error?: string; partial?: string; rows?: ReturnType<typeof workloadRows> }[];
  seconds: number;
}

/** What every bench:wizard result must hold: each workload measured (or skipped, saying why) with sound rows. */
function checkResult(r: WizardResultFile, { allowSkipped }: { allowSkipped: boolean }) {
  expect(r.benchmark).toBe('wizard');
  expect(['tiny', 'full']).toContain(r.size);
  expect(r.seconds).toBeGreaterThan(0);
  expect(r.workloads.map((w) => w.name).sort()).toEqual(['bert', 'gpt2', 'resnet']);
  for (const w of r.workloads) {
    expect(w.error, `${w.name} failed`).toBeUndefined();
    expect(w.partial, `${w.name} stopped`).toBeUndefined();
    if (w.skipped && allowSkipped) continue;
    expect(w.skipped, `${w.name} skipped`).toBeUndefined();
    const rows = w.rows!;
    expect(rows.map((row) => row.id)).toEqual(VARIANTS.filter((id) => !id.startsWith('wizard-') || r.protocol.presets.includes(id.slice('wizard-'.length))));
    const byId = Object.fromEntries(rows.map((row) => [row.id, row]));
    for (const row of rows) {
      const what = `${w.name} ${row.id}`;
      expect(row.samples.length, what).toBe(r.protocol.rounds);
      for (const s of row.samples) expect(Number.isFinite(s) && s > 0, `${what}: ${s}`).toBe(true);
      expectInterval(row.samplesPerSec, `${what} samples/s`);
      expectInterval(row.speedupOverPlain, `${what} speedup`);
      expectInterval(row.shareOfExpert, `${what} share of the expert's`);
      // The speedup is the row's samples/s over the plain script's; the share, over the expert's.
      expect(row.speedupOverPlain.median, what).toBeCloseTo(row.samplesPerSec.median / byId.plain.samplesPerSec.median, 9);
      expect(row.shareOfExpert.median, what).toBeCloseTo(row.samplesPerSec.median / byId.expert.samplesPerSec.median, 9);
      if (row.sameAs) expect(row.samples, what).toEqual(byId[row.sameAs].samples);
      if (row.id.startsWith('wizard-')) {
        const z = row.wizard!;
        expect(z.preset, what).toBe(row.id.slice('wizard-'.length));
        expect(z.wallSeconds, what).toBeGreaterThan(0);
        expect(z.lossCheck.verdict, what).toMatch(/\S/);
        expect(z.overrides, what).toEqual(row.overrides);
        for (const k of z.kept) expect(k.speedup!.low, `${what}: ${k.change} kept`).toBeGreaterThan(1);
      }
    }
    expect(byId.plain.speedupOverPlain.median).toBe(1);
    expect(byId.expert.shareOfExpert.median).toBe(1);
  }
}

describe('bench:wizard rows', () => {
  const variant = (id: string, samples: number[], sameAs: string | null = null): MeasuredVariant => ({ id, label: id, command: [], overrides: {}, sameAs, samples });

  it("gives each row its samples/s, its speedup over the plain script's and its share of the expert's", () => {
    const rows = workloadRows([variant('plain', [100, 90, 110]), variant('wizard-balanced', [], 'plain'), variant('wizard-max-speed', [150, 160, 140]), variant('expert', [200, 190, 210])]);
    expect(rows.map((r) => r.samplesPerSec.median)).toEqual([100, 100, 150, 200]);
    expect(rows.map((r) => r.speedupOverPlain.median)).toEqual([1, 1, 1.5, 2]);
    expect(rows.map((r) => r.shareOfExpert.median)).toEqual([0.5, 0.5, 0.75, 1]);
    expect(rows[1].samples).toEqual([100, 90, 110]);
    expect(rows[2].speedupOverPlain.low).toBeLessThan(1.5);
    expect(rows[2].speedupOverPlain.high).toBeGreaterThan(1.5);
  });

  it('sorts what a wizard kept, rejected and left undecided, with its loss check', () => {
    const trial = (label: string, decision: string, kept: boolean, lossDelta: number | null, why: string) => ({
      change: { label },
      decision,
      kept,
      lossDelta,
      why,
      seconds: 1,
      error: null,
      speedup: { low: 1.1, median: 1.2, high: 1.3 },
    });
    const result = {
      preset: 'balanced',
      status: 'completed',
      seconds: 10,
      baseline: { samplesPerSec: { low: 1, median: 2, high: 3 }, noiseFloor: 0.05 },
      diagnosis: null,
      trials: [
        trial('amp.dtype fp32 -> bf16', 'accept', true, 0.001, 'speedup 1.2x'),
        trial('compile.mode off -> default', 'changes-results', false, 0.2, 'the mean loss over the measured steps moved by 20%'),
        trial('memory.channels_last false -> true', 'inconclusive', false, 0, 'the interval contains 1'),
        trial('optim.impl default -> fused', 'reject', false, 0, 'the whole interval is below 1'),
      ],
      skipped: [{ change: { label: 'dataloader.pin_memory false -> true' }, why: 'this script trains on cpu' }],
      final: { verdict: 'faster' },
      target: { kind: 'script', final: { overrides: { 'amp.dtype': 'bf16' } }, lossCheck: { seed: 0, tolerance: 0.05, seededBy: 'trainbench', where: 'torch import', unchecked: null } },
    };
    const s = wizardSummary(result, 12);
    expect(s.kept.map((k) => k.change)).toEqual(['amp.dtype fp32 -> bf16']);
    expect(s.rejected.map((k) => [k.change, k.decision])).toEqual([
      ['compile.mode off -> default', 'changes-results'],
      ['optim.impl default -> fused', 'reject'],
    ]);
    expect(s.undecided.map((k) => k.change)).toEqual(['memory.channels_last false -> true']);
    expect(s.notTried).toEqual([{ change: 'dataloader.pin_memory false -> true', why: 'this script trains on cpu' }]);
    expect(s.lossCheck).toMatchObject({ verdict: 'passed for every kept change', rejectedForLoss: ['compile.mode off -> default'], tolerance: 0.05 });
    expect(s.overrides).toEqual({ 'amp.dtype': 'bf16' });
    result.trials[0].lossDelta = null;
    expect(wizardSummary(result, 12).lossCheck.verdict).toBe('kept without a loss check: amp.dtype fp32 -> bf16');
  });
});

describe('bench:wizard committed results', () => {
  it('each bench/results/wizard-*.json (the CPU one at least) holds every workload with sound rows', () => {
    const files = readdirSync(RESULTS).filter((f) => /^wizard-.*\.json$/.test(f));
    expect(files).toContain('wizard-cpu-dev-2core.json');
    for (const file of files) checkResult(JSON.parse(readFileSync(path.join(RESULTS, file), 'utf8')), { allowSkipped: true });
  });
});

const run = promisify(execFile);
const skip = process.env.TB_BENCH_WIZARD === '1' ? null : 'set TB_BENCH_WIZARD=1 to run bench:wizard at the tiny size (about 10 minutes on 2 cores)';

describe.skipIf(skip !== null)(skip ? `bench:wizard end to end: skipped: ${skip}` : 'bench:wizard end to end', () => {
  it('runs the three workloads at the tiny size and writes a sound result', async () => {
    const out = tempDir('trainbench-bench-wizard-test-');
    try {
      const file = path.join(out.dir, 'wizard.json');
      const { stdout } = await run(process.execPath, [path.join(REPO_ROOT, 'bench', 'wizard', 'wizard-bench.mjs'), '--size', 'tiny', '--device', 'cpu', '--presets', 'balanced', '--rounds', '2', '--out', file], {
        cwd: REPO_ROOT,
        maxBuffer: 64 << 20,
      });
      expect(stdout).toMatch(/\| resnet \| plain script \|/);
      const result = JSON.parse(readFileSync(file, 'utf8')) as WizardResultFile;
      expect(result.device).toMatchObject({ kind: 'cpu' });
      expect(result.device.torch).toMatch(/^2\./);
      expect(result.protocol.presets).toEqual(['balanced']);
      checkResult(result, { allowSkipped: false });
    } finally {
      out.cleanup();
    }
  }, 30 * 60_000);
});
