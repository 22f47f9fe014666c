// Which steps the probe reads DDP's stamps at (issue 40): as sparse as the read budget asks on a long job, but never so
// sparse that a short measured window keeps too few steps read by every rank to name a straggler (a busy CI machine
// read 1 step in 8 of 20 and named none). The reader is driven here with a model whose stamps are always new.
import { describe, expect, it } from 'vitest';

import { withProbeCollectives as py } from './script-helpers';

describe('the DDP stamp reader', () => {
  it('reads at most one step in 8, and fewer skipped where the measured window is short', () => {
    expect(py(`print(json.dumps([c.most_every(w) for w in (0, 8, 20, 31, 32, 64, 127, 128, 10000)]))`)).toEqual([8, 1, 1, 1, 2, 4, 4, 8, 8]);
  });

  it('on reads that cost more than the budget, reads the steps its window allows: every step of 20, one in 8 of an unknown window', () => {
    const got = py(`
import time
def reads(window):
    read = []
    c._reducer_item = lambda model: (0.0, 1.0, 4, 1)  # always a new sync
    class Seen:
        def record(self, index, op, *item):
            read.append(n["step"])
    poll = c.stamp_poller(lambda: [object()], Seen(), lambda what: None, lambda model: None, budget=1e-9, sparsest=c.most_every(window))
    for step in range(1, 33):
        n["step"] = step
        poll()
        time.sleep(0.001)
    return read
n = {}
print(json.dumps([reads(20), reads(0)]))`) as [number[], number[]];
    // The first two are read before the cost is known; after them, every step of a 20-step window, one in 8 otherwise.
    expect(got[0]).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(got[1]).toEqual([1, 2, 8, 16, 24, 32]);
  });
});
