// Issue 38: the probe costs a fast training step at most 2% of a 5 ms step. What made it cost more, kept from
// coming back: a socket write per message (the reader woken on the training thread's core at every step), a
// wrapper on zero_grad() at every step, a CPU loss held as a tensor (its storage kept glibc from reusing the
// step's large blocks). The cost itself is bench/script/probe_step_overhead.py's; here a coarse bound on it.
import { execFileSync } from 'node:child_process';
import path from 'node:path';

import { describe, expect, it } from 'vitest';

import { REPO_ROOT } from '../helpers/repo';
import { fixtureReport, INTERPRETERS, kindOf, PROBE_DIR, runProbed } from './probe-run';
import { PYTHON } from './script-helpers';

const PROBE_PATH = { ...process.env, PYTHONPATH: PROBE_DIR };

// The channel with its clock moved by hand and its socket replaced by a list of what each write carried.
const CHANNEL = `
import json, os, time
import trainbench_probe.channel as ch

now = [0.0]
ch.time.perf_counter = lambda: now[0]
sent = []

class FakeSocket:
    def sendall(self, data):
        sent.append([json.loads(l)["step"] for l in data.decode().splitlines()])
    def close(self):
        pass

def connect(self):
    self._sock, self._pid = FakeSocket(), os.getpid()

ch.Channel._connect = connect
c = ch.Channel("127.0.0.1:9", "t", {})
out = {}
step = lambda n: {"type": "step", "step": n}
for n in range(1, 11):
    now[0] = n * 0.005
    c.send(step(n))
out["heldTen"] = len(sent)
c.send({"type": "flops", "step": 0})
out["withFlops"] = sent[-1]
now[0] = 1.0
c.send(step(11))
now[0] = 1.0 + ch.FLUSH_S
c.send(step(12))
out["byAge"] = sent[-1]
c.send(step(13), at_once=True)
out["atOnce"] = sent[-1]
now[0] = 2.0
c.send(step(14))
calls = len(sent)
now[0] = 2.0 + 2 * ch.FLUSH_S
deadline = time.time() + 10
while len(sent) == calls and time.time() < deadline:
    time.sleep(0.01)
out["byFlusher"] = sent[-1] if len(sent) > calls else None
now[0] = 3.0
c.send(step(15))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    c.send({"type": "error", "step": -1})
    os.write(w, json.dumps(sent[-1]).encode())
    os._exit(0)
os.waitpid(pid, 0)
out["child"] = json.loads(os.read(r, 65536))
c.close()
out["closed"] = sent[-1]
print(json.dumps(out))
`;

const LOOP = `
import json, sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
wrapped = lambda: [bool(getattr(c.zero_grad, "_trainbench", False)) for c in (torch.optim.Optimizer, nn.Module)]
seen = {"before": wrapped()}
losses = []
for i in range(40):
    opt.zero_grad()
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if i == 0:
        seen["after"] = wrapped()
print("FIXTURE " + json.dumps(dict(seen, losses=losses)))
`;

describe('probe overhead: what a step pays for', () => {
  it('holds per-step messages and sends them together, every other message at once after them; a forked child sends none of its parent’s', () => {
    const out = JSON.parse(execFileSync(PYTHON, ['-c', CHANNEL], { env: PROBE_PATH, encoding: 'utf8' }));
    expect(out.heldTen).toBe(0);
    expect(out.withFlops).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0]);
    expect(out.byAge).toEqual([11, 12]);
    expect(out.atOnce).toEqual([13]);
    expect(out.byFlusher).toEqual([14]); // the training thread stopped stepping: the flusher thread sent it
    expect(out.child).toEqual([-1]);
    expect(out.closed).toEqual([15]);
  });

  it('reads a CPU loss as a number at backward(): no tensor of the step is kept', () => {
    const program = `
import torch
from trainbench_probe.losses import LossReader
r = LossReader(torch, print)
w = torch.ones(2, requires_grad=True)
got = r.scalar_of((w * 1.5).sum())
print(type(got).__name__, got)
`;
    expect(execFileSync(PYTHON, ['-c', program], { env: PROBE_PATH, encoding: 'utf8' }).trim()).toBe('float 3.0');
  });

  for (const i of INTERPRETERS) {
    describe.skipIf(!i.python)(i.label, () => {
      it('says the first zero_grad(), then leaves zero_grad() as torch’s own; the losses are the script’s', async () => {
        const run = await runProbed([i.python!, '-c', LOOP]);
        expect(run.code, run.stderr).toBe(0);
        const report = fixtureReport<{ before: boolean[]; after: boolean[]; losses: number[] }>(run.stdout);
        expect(report.before).toEqual([true, true]);
        expect(report.after).toEqual([false, false]);
        const [p] = run.processes;
        expect(kindOf(p, 'zeroGrad')).toHaveLength(1);
        const losses = new Map(kindOf(p, 'loss').flatMap((m) => (m.steps as number[]).map((s, k) => [s, (m.values as number[])[k]] as const)));
        expect([...losses.keys()]).toEqual(report.losses.map((_, k) => k + 1));
        report.losses.forEach((loss, k) => expect(losses.get(k + 1)).toBeCloseTo(loss, 5));
      });

      it('costs a tiny step well under 150 µs of CPU time (the probe before issue 38: 220 µs; now about 50)', async () => {
        // The bench's toggled worker: blocks with the probe's patches on and off in one process, ABBA.
        const bench = path.join(REPO_ROOT, 'bench', 'script', 'probe_step_overhead.py');
        const run = await runProbed([i.python!, bench, '--worker', '--iterations', '0', '--width', '8', '--blocks', '24', '--block-iterations', '150'], {
          env: { OMP_NUM_THREADS: '1' },
          cwd: REPO_ROOT,
          timeoutMs: 180_000,
        });
        expect(run.code, run.stderr).toBe(0);
        const blocks = (JSON.parse(run.stdout.trim().split('\n').pop()!) as { blocks: { on: boolean; threadUs: number }[] }).blocks;
        const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
        const cost = mean(blocks.filter((b) => b.on).map((b) => b.threadUs)) - mean(blocks.filter((b) => !b.on).map((b) => b.threadUs));
        console.log(`${i.label}: the probe's cost at a tiny step ${cost.toFixed(1)} µs of thread CPU time an iteration`);
        expect(cost).toBeLessThan(150);
      }, 200_000);
    });
  }
});
