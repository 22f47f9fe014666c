// Issue 14: the parts of the script target that need no Python: overrides, output lines, the probe's channel, rank figures.
import net from 'node:net';

import { describe, expect, it } from 'vitest';

import { parseOverride, ScriptOverridesSchema } from '../../src-main/api/script-target';
import { lineSplitter, MAX_OUTPUT_LINE } from '../../src-main/core/script/launcher';
import { openProbeChannel } from '../../src-main/core/script/probe-channel';
import type { ProbeConnection } from '../../src-main/core/script/probe-channel';
import { combineRanks, summarizeRank } from '../../src-main/core/script/rank-stats';

describe('overrides', () => {
  it('parses each known key to its type', () => {
    expect(parseOverride('dataloader.num_workers=8')).toEqual({ key: 'dataloader.num_workers', value: 8 });
    expect(parseOverride('dataloader.pin_memory=true')).toEqual({ key: 'dataloader.pin_memory', value: true });
    expect(parseOverride('cudnn.benchmark=False')).toEqual({ key: 'cudnn.benchmark', value: false });
    expect(parseOverride('matmul.precision=high')).toEqual({ key: 'matmul.precision', value: 'high' });
    expect(parseOverride('optim.impl=fused')).toEqual({ key: 'optim.impl', value: 'fused' });
  });

  it('refuses unknown keys with the known ones, and bad values with what the key takes', () => {
    expect(() => parseOverride('dataloader.nonsense=1')).toThrow(/unknown override "dataloader.nonsense"; known keys: dataloader.num_workers, .*matmul.precision/);
    expect(() => parseOverride('dataloader.num_workers=-1')).toThrow('bad value "-1" for dataloader.num_workers: a whole number >= 0');
    expect(() => parseOverride('dataloader.batch_size=0')).toThrow('a whole number >= 1');
    expect(() => parseOverride('optim.impl=apex')).toThrow('bad value "apex" for optim.impl: foreach or fused');
    expect(() => parseOverride('matmul.precision=fast')).toThrow('highest, high or medium');
    expect(() => parseOverride('num_workers')).toThrow('--set takes key=value, got "num_workers"');
  });

  it('checks overrides arriving over the API the same way', () => {
    expect(ScriptOverridesSchema.safeParse({ 'dataloader.num_workers': 2 }).success).toBe(true);
    const bad = ScriptOverridesSchema.safeParse({ 'dataloader.workers': 2, 'cudnn.benchmark': 'yes' });
    expect(bad.success).toBe(false);
    const messages = bad.error!.issues.map((i) => i.message).join('\n');
    expect(messages).toContain('unknown override "dataloader.workers"');
    expect(messages).toContain('bad value "yes" for cudnn.benchmark');
  });
});

describe('lineSplitter', () => {
  it('splits on \\n, \\r\\n and \\r, keeps multi-byte characters cut between chunks, and cuts over-long lines', () => {
    const lines: string[] = [];
    const split = lineSplitter((l) => lines.push(l));
    const euro = Buffer.from('€');
    split.push(Buffer.concat([Buffer.from('a\r\nb\rc'), euro.subarray(0, 1)]));
    split.push(Buffer.concat([euro.subarray(1), Buffer.from('\n\xff')]));
    split.push(Buffer.from('y'.repeat(MAX_OUTPUT_LINE + 5)));
    split.end();
    expect(lines.slice(0, 3)).toEqual(['a', 'b', 'c€']);
    expect(lines[3]).toHaveLength(MAX_OUTPUT_LINE);
    expect(lines[4]).toBe('yyyyyy');
  });
});

function connect(address: string): Promise<net.Socket> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const s = net.connect(Number(port), host, () => resolve(s));
  });
}

describe('probe channel', () => {
  it('hears only a connection that shows the token, and drops lines that are not probe messages', async () => {
    const channel = await openProbeChannel();
    const hello = { type: 'hello', pid: 1, rank: 0, localRank: 0, worldSize: 1, python: '3.11' };
    const intruder = await connect(channel.address);
    intruder.write(JSON.stringify({ ...hello, token: 'wrong' }) + '\n' + JSON.stringify({ type: 'error', code: 'E', message: 'x' }) + '\n');
    const probe = await connect(channel.address);
    const step = { type: 'step', step: 1, durMs: 5, samples: 8, batches: 1, dataMs: 1, phasesMs: { forward: 1, loss: 0, backward: 1, optimizer: 1 }, timing: 'host-clock' };
    probe.write(JSON.stringify({ ...hello, token: channel.token }) + '\nnot json\n{"type":"step"}\n' + JSON.stringify(step) + '\n');
    probe.end();
    intruder.end();
    await channel.close();
    expect(channel.connections).toHaveLength(1);
    expect(channel.connections[0].messages).toEqual([step]);
    expect(channel.rejected).toBe(3);
  });
});

function rank(r: number, steps: { durMs: number; samples: number; dataMs: number }[]): ProbeConnection {
  return {
    hello: { type: 'hello', token: 't', pid: 100 + r, rank: r, localRank: r, worldSize: 2, python: '3.11' },
    messages: steps.map((s, i) => ({ type: 'step', step: i + 1, batches: 1, phasesMs: { forward: 1, loss: 0.5, backward: 2, optimizer: 0.5 }, timing: 'host-clock', ...s })),
  };
}

describe('rank figures', () => {
  it('measure the steps after the warm-up, sum samples/s over ranks and name the slowest data wait', () => {
    const a = summarizeRank(rank(0, [{ durMs: 100, samples: 10, dataMs: 50 }, { durMs: 10, samples: 10, dataMs: 1 }, { durMs: 10, samples: 10, dataMs: 3 }]), 1, undefined)!;
    const b = summarizeRank(rank(1, [{ durMs: 100, samples: 10, dataMs: 50 }, { durMs: 20, samples: 10, dataMs: 3 }, { durMs: 20, samples: 10, dataMs: 3 }]), 1, undefined)!;
    expect(a.rank.measuredSteps).toBe(2);
    expect(a.rank.samplesPerSec).toBeCloseTo(1000, 9); // 20 samples in 20 ms
    expect(a.rank.wallClockMeanMs).toBeCloseTo(40, 9);
    expect(a.rank.dataWaitMs).toBeCloseTo(2, 9);
    expect(a.rank.dataWaitPercent).toBeCloseTo(20, 9); // 4 of 20 ms
    const both = combineRanks([a, b]);
    expect(both.samplesPerSec).toBeCloseTo(1500, 9);
    expect(both.steadyStateMeanMs).toBe(20);
    expect(both.slowestDataWait).toEqual({ rank: 1, msPerStep: 3, percent: 15 });
    expect(both.phasesMs.other).toBeCloseTo(20 - (2.5 + 1 + 0.5 + 2 + 0.5), 9);
    expect(summarizeRank(rank(0, [{ durMs: 1, samples: 1, dataMs: 0 }]), 1, undefined)).toBeNull();
  });
});
