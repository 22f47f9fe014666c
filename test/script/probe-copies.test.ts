// copy.non_blocking through the probe (issue 28): which `.to(...)` calls it changes, decided on real torch
// arguments; refused by name where torch sees no CUDA device; on a CUDA machine, the Fashion-MNIST tutorial's
// own `X.to(device)` of each pinned batch made non-blocking, counted, with the script's losses unchanged.
import { execFileSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import type { Interpreter } from './probe-run';
import { INTERPRETERS, kindOf, PROBE_DIR, runProbed } from './probe-run';
import { SCRIPTS } from './script-helpers';

const DECISIONS = `
import json, torch
from trainbench_probe.copies import asks_cuda_copy
x = torch.zeros(2)
on_cuda_meta = torch.empty(2, device="meta")
cases = {
    "to('cuda')": (("cuda",), {}),
    "to('cuda:1')": (("cuda:1",), {}),
    "to(torch.device('cuda'))": ((torch.device("cuda"),), {}),
    "to(device='cuda', dtype=float16)": ((), {"device": "cuda", "dtype": torch.float16}),
    "to('cuda', float16)": (("cuda", torch.float16), {}),
    "to('cuda', non_blocking=False)": (("cuda",), {"non_blocking": False}),
    "to('cuda', float32, False) (nn.Module.to's form)": (("cuda", torch.float32, False), {}),
    "to(other_tensor, True)": ((x, True), {}),
    "to('cpu')": (("cpu",), {}),
    "to(float16)": ((torch.float16,), {}),
    "to(cpu tensor)": ((x,), {}),
    "to(meta tensor)": ((on_cuda_meta,), {}),
    "to('not a device')": (("not a device",), {}),
    "to()": ((), {}),
}
print(json.dumps({name: asks_cuda_copy(torch, a, k) for name, (a, k) in cases.items()}))
`;

const hasCuda = (python: string) =>
  execFileSync(python, ['-c', 'import torch; print(int(torch.cuda.is_available()))'], { encoding: 'utf8' }).trim() === '1';

describe.each(INTERPRETERS)('copy.non_blocking on $label', (t: Interpreter) => {
  it.skipIf(!t.python)('changes only a copy to a CUDA device that leaves non_blocking to its default', () => {
    const out = execFileSync(t.python!, ['-c', DECISIONS], { env: { ...process.env, PYTHONPATH: PROBE_DIR }, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({
      "to('cuda')": true,
      "to('cuda:1')": true,
      "to(torch.device('cuda'))": true,
      "to(device='cuda', dtype=float16)": true,
      "to('cuda', float16)": true,
      "to('cuda', non_blocking=False)": false,
      "to('cuda', float32, False) (nn.Module.to's form)": false,
      'to(other_tensor, True)': false,
      "to('cpu')": false,
      'to(float16)': false,
      'to(cpu tensor)': false,
      'to(meta tensor)': false,
      "to('not a device')": false,
      'to()': false,
    });
  });

  it.skipIf(!t.python || hasCuda(t.python))('where torch sees no CUDA device the override is refused by name, the script not run on without it', async () => {
    const r = await runProbed([t.python!, `${SCRIPTS}/fashion_mnist_tutorial.py`, '--epochs', '1', '--limit', '640'], {
      env: { TB_PROBE_SET: JSON.stringify({ 'copy.non_blocking': true }) },
    });
    expect(r.code).not.toBe(0);
    expect(kindOf(r.processes[0], 'error')[0].message).toMatch(
      /^override copy\.non_blocking=true could not be applied to the script's copies: torch \S+ sees no CUDA device: a copy within host memory has nothing to overlap$/,
    );
  });

  // Runs where a GPU is (the lent machine's kit); here it is skipped and said so in the closing note.
  it.skipIf(!t.python || !hasCuda(t.python))("on CUDA: the script's .to(device) of each pinned batch is made non-blocking and counted", async () => {
    const argv = [t.python!, `${SCRIPTS}/fashion_mnist_tutorial.py`, '--epochs', '1', '--limit', '1280', '--device', 'cuda'];
    const set = (o: Record<string, unknown>) => ({ env: { TB_PROBE_SET: JSON.stringify(o), TB_PROBE_SEED: '1' } });
    const blocking = await runProbed(argv, set({ 'dataloader.pin_memory': true }));
    const overlapped = await runProbed(argv, set({ 'dataloader.pin_memory': true, 'copy.non_blocking': true }));
    expect(overlapped.code, overlapped.stderr).toBe(0);
    const [applied] = kindOf(overlapped.processes[0], 'applied').filter((m) => m.key === 'copy.non_blocking');
    expect(String(applied.where)).toMatch(/fashion_mnist_tutorial\.py:\d+$/);
    // X and y of each of 20 batches.
    expect(kindOf(overlapped.processes[0], 'copies')).toEqual([{ type: 'copies', nonBlocking: 40 }]);
    expect(overlapped.stdout).toBe(blocking.stdout);
  });
});
