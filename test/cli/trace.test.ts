// Issue 13: `trainbench trace` on a real CPU benchmark (and training) run: Chrome trace-event JSON whose
// phase tracks add up to the engine's measured step time.
import { execFileSync } from 'node:child_process';
import { readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { EngineBenchmarkResult } from '../../src-main/api/benchmark-result';
import type { TraceEvent, TraceFile } from '../../src-main/api/reports';
import { requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';
import { batchSearchRun, benchmarkRun, cli, trainRun } from './report-fixture';

const ws = tempDir();
beforeAll(requireBuilt);
afterAll(() => ws.cleanup());

/** The trace-event format's rules for the events we write (complete 'X' and metadata 'M'). */
function checkEvent(e: TraceEvent): void {
  expect(['X', 'M']).toContain(e.ph);
  expect(typeof e.name).toBe('string');
  expect(Number.isFinite(e.ts) && e.ts >= 0).toBe(true);
  expect(Number.isInteger(e.pid) && Number.isInteger(e.tid)).toBe(true);
  if (e.ph === 'X') expect(Number.isFinite(e.dur) && (e.dur as number) >= 0).toBe(true);
  else expect(['process_name', 'thread_name']).toContain(e.name);
}

function trackNames(trace: TraceFile, pid: number): Map<number, string> {
  return new Map(trace.traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === pid).map((e) => [e.tid, String(e.args?.name)]));
}

describe('trainbench trace', () => {
  let runId: string;
  let result: EngineBenchmarkResult;
  let trace: TraceFile;
  const outFile = path.join(ws.dir, 'exported', 'trace.json');

  beforeAll(async () => {
    runId = await benchmarkRun(ws.dir);
    result = (JSON.parse(readFileSync(path.join(ws.dir, 'runs', runId, 'run.json'), 'utf8')) as { result: EngineBenchmarkResult }).result;
    const out = await cli(ws.dir, ['trace', runId, '--out', outFile]);
    expect(out).toContain(`trace    run ${runId}: `);
    trace = JSON.parse(readFileSync(path.join(ws.dir, 'runs', runId, 'trace.json'), 'utf8')) as TraceFile;
  }, 300_000);

  it('writes trace-event JSON (ph, ts, dur, pid, tid) to the run folder and to --out', () => {
    expect(JSON.parse(readFileSync(outFile, 'utf8'))).toEqual(trace);
    expect(trace.displayTimeUnit).toBe('ms');
    for (const e of trace.traceEvents) checkEvent(e);
  });

  it('has one process per repetition and one track per phase, one slice per measured step', () => {
    const pids = [...new Set(trace.traceEvents.map((e) => e.pid))].sort();
    expect(pids).toEqual(result.repetitions.map((r) => r.repetition));
    for (const pid of pids) {
      expect([...trackNames(trace, pid).values()]).toEqual(['step', 'data', 'h2d', 'forward', 'loss', 'backward', 'optimizer', 'other']);
      const steps = trace.traceEvents.filter((e) => e.pid === pid && e.ph === 'X' && e.cat === 'step');
      expect(steps).toHaveLength(result.steps);
      // Steps follow one another without overlapping.
      for (let i = 1; i < steps.length; i++) expect(steps[i].ts).toBeGreaterThanOrEqual(steps[i - 1].ts + (steps[i - 1].dur ?? 0) - 0.01);
    }
  });

  it("adds up, per repetition, to the engine's measured step time within 1%", () => {
    for (const rep of result.repetitions) {
      const measuredUs = rep.steadyStateMeanMs * result.steps * 1000;
      const slices = trace.traceEvents.filter((e) => e.pid === rep.repetition && e.ph === 'X');
      const phaseSum = slices.filter((e) => e.cat === 'phase').reduce((s, e) => s + (e.dur ?? 0), 0);
      const stepSum = slices.filter((e) => e.cat === 'step').reduce((s, e) => s + (e.dur ?? 0), 0);
      expect(Math.abs(phaseSum - measuredUs) / measuredUs, `repetition ${rep.repetition}`).toBeLessThan(0.01);
      expect(Math.abs(stepSum - phaseSum) / measuredUs).toBeLessThan(1e-6);
    }
  });

  it('says in words why --out cannot be written, and waits on no FIFO and spins on no /proc path (seventh re-attack of issue 41)', async () => {
    const fails = (out: string) => cli(ws.dir, ['trace', runId, '--out', out]).then(() => 'written', (err: Error) => err.message);
    const fifo = path.join(ws.dir, 'exported', 'planted.fifo');
    execFileSync('mkfifo', [fifo]);
    expect(await fails(fifo)).toContain(`trainbench: cannot write ${fifo}: it is a FIFO, not a file`);
    expect(await fails(path.join(ws.dir, 'exported'))).toContain(`cannot write ${path.join(ws.dir, 'exported')}: it is a folder, not a file`);
    expect(await fails(path.join(outFile, 'x.json'))).toContain(`cannot create ${outFile}: ${outFile} is a file, not a folder`);
    // Node's own recursive mkdir span here for ever: the system answers ENOENT under a folder that exists.
    expect(await fails('/proc/self/x/trace.json')).toContain('cannot create /proc/self/x: /proc/self does not take new folders');
    // A link to nothing where a folder would be made: said as what it is, not a raw ENOENT naming a temp file.
    const dangling = path.join(ws.dir, 'exported', 'gone-link');
    symlinkSync(path.join(ws.dir, 'nowhere'), dangling);
    expect(await fails(path.join(dangling, 't.json'))).toContain(`cannot create ${dangling}: ${dangling} is a link that leads nowhere`);
    const full = await fails('/dev/full');
    expect(full).toContain('cannot write /dev/full: no space left on the disk');
    expect(full).not.toMatch(/ENOSPC|EISDIR|EEXIST/);
  });

  it('traces a training run too, and refuses what has no timed steps', async () => {
    const train = await trainRun(ws.dir);
    await cli(ws.dir, ['trace', train]);
    const t = JSON.parse(readFileSync(path.join(ws.dir, 'runs', train, 'trace.json'), 'utf8')) as TraceFile;
    for (const e of t.traceEvents) checkEvent(e);
    expect(t.traceEvents.some((e) => e.cat === 'step')).toBe(true);

    const search = await batchSearchRun(ws.dir);
    await expect(cli(ws.dir, ['trace', search])).rejects.toThrow(`run ${search} is a batch-search run; traces are made of benchmark and train runs, which time their steps`);
    await expect(cli(ws.dir, ['trace', 'missing-run'])).rejects.toThrow(/there is no run missing-run in the workspace/);
    await expect(cli(ws.dir, ['trace', '../etc'])).rejects.toThrow(/params.id: ids are letters, digits/);
  }, 180_000); // a real training run and a batch search: 20 s alone, longer beside the other suites
});
