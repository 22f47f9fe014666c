"""What the probe costs an iteration of a Lightning Trainer loop (issue 38's finding 6: +11 to +16% of a 6 ms
Lightning step), measured as probe_step_overhead.py's toggled row measures a plain loop.

A LightningModule (an MLP sized by --width, one thread, SGD through Lightning's automatic optimisation: its
step takes a closure) trains under the probe, injected as Trainbench launches it. A Callback switches the
probe's patches (found after a warm-up) off and on in blocks of --block-iterations (ABBA) at the start of a
batch and reads the main thread's CPU time from one batch start to the next; each block's first iteration,
which pays for the switch, is left out. The cost is the mean over ABBA quads with its 95% bootstrap interval (the
plain loop bench's); with --baseline the other probe's processes run in turns with this checkout's.

    .venv-torch2/bin/python bench/script/probe_lightning_overhead.py [--width 760] [--processes 3]
        [--blocks 400] [--baseline DIR] [--out FILE]

Lightning runs on torch 2.x only (lightning 2.6 requires torch >= 2.1). Prints a table and writes JSON (--out).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from collector import drain_server, write_result
from probe_step_overhead import _block_on, interval, probe_patches

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "resources", "python")
WARMUP = 40  # batches before the patches are found: the probe settles its hooks and counts FLOPs in its first ones


def worker(width, blocks, block_iterations):
    os.environ.setdefault("PL_DISABLE_FORK", "1")
    import lightning as L
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    torch.manual_seed(0)

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))

        def forward(self, x):
            return self.net(x)

        def training_step(self, batch, index):
            x, y = batch
            return nn.functional.cross_entropy(self(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    class Toggle(L.Callback):
        def __init__(self):
            self.i, self.t, self.patches, self.times = 0, None, None, []

        def on_train_batch_start(self, trainer, module, batch, index):
            now = time.thread_time()
            if self.t is not None:
                self.times.append((now - self.t) * 1e6)  # the previous batch's, start to start
            if self.i == WARMUP:
                self.patches = probe_patches(torch, module)
            if self.patches and self.i >= WARMUP and (self.i - WARMUP) % block_iterations == 0:
                (self.patches[1] if _block_on((self.i - WARMUP) // block_iterations) else self.patches[0])()
            self.i += 1
            self.t = time.thread_time()

    n = (WARMUP + blocks * block_iterations + 2) * 64
    data = DataLoader(TensorDataset(torch.randn(n, 256), torch.randint(0, 10, (n,))), batch_size=64)
    toggle = Toggle()
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, callbacks=[toggle])
    trainer.fit(Net(), data)
    means = []
    for b in range(blocks):
        idx = range(WARMUP + b * block_iterations + 1, WARMUP + (b + 1) * block_iterations)
        if idx[-1] < len(toggle.times):
            means.append(statistics.mean(toggle.times[k] for k in idx))
    quads = [(means[k] + means[k + 3]) / 2 - (means[k + 1] + means[k + 2]) / 2 for k in range(0, len(means) - 3, 4)]
    off = statistics.mean(m for b, m in enumerate(means) if not _block_on(b))
    print(json.dumps({"found": toggle.patches is not None, "offUs": off, "quads": quads}))
    sys.stdout.flush()
    os._exit(0)  # the probe's atexit would send its totals to a socket nobody reads now


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=760, help="hidden width (760: about a 4.6 ms step here)")
    parser.add_argument("--processes", type=int, default=3, help="processes per probe, each with --blocks blocks")
    parser.add_argument("--blocks", type=int, default=400)
    parser.add_argument("--block-iterations", type=int, default=5)
    parser.add_argument("--baseline", help="another resources/python folder to measure in turns (an older commit's)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.width, args.blocks, args.block_iterations)
    addr = drain_server()
    probes = [("probe", PROBE)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])
    got = {name: {"quads": [], "offUs": []} for name, _ in probes}
    env0 = dict(os.environ, OMP_NUM_THREADS="1", TB_PROBE_ADDR=addr, MALLOC_TRIM_THRESHOLD_=str(1 << 30), MALLOC_MMAP_THRESHOLD_=str(32 << 20), MALLOC_TOP_PAD_=str(64 << 20))
    torch_version = subprocess.run([args.python, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True).stdout.strip()
    for k in range(args.processes):
        for name, folder in probes if k % 2 == 0 else probes[::-1]:
            cmd = [args.python, os.path.abspath(__file__), "--worker", "--width", str(args.width), "--blocks", str(args.blocks), "--block-iterations", str(args.block_iterations)]
            r = subprocess.run(cmd, env=dict(env0, PYTHONPATH=folder), capture_output=True, text=True, cwd=HERE)
            lines = r.stdout.strip().splitlines()
            if r.returncode != 0 or not lines:
                raise SystemExit("the Lightning worker failed (%s):\n%s" % (r.returncode, r.stderr[-3000:]))
            out = json.loads(lines[-1])
            if not out["found"]:
                raise SystemExit("no probe patches found in the worker: is %s a probe folder?" % folder)
            got[name]["quads"] += out["quads"]
            got[name]["offUs"].append(out["offUs"])
    rows = {}
    print("probe overhead in a Lightning loop: torch %s, Python %s, %d CPUs, width %d, %d processes x %d blocks of %d" % (torch_version, platform.python_version(), os.cpu_count(), args.width, args.processes, args.blocks, args.block_iterations))
    print("  %-9s %10s %26s %22s" % ("config", "step µs", "cost µs [95%]", "of the step [95%]"))
    for name, _ in probes:
        q = got[name]["quads"]
        m, (lo, hi) = statistics.mean(q), interval(q)
        step = statistics.mean(got[name]["offUs"])
        rows[name] = {"costUs": m, "costUs95": [lo, hi], "stepUs": step, "ofStepPercent": 100 * m / step, "ofStepPercent95": [100 * lo / step, 100 * hi / step], "quads": len(q)}
        print("  %-9s %10.0f %10.1f [%6.1f, %6.1f] %8.2f%% [%.2f, %.2f]" % (name, step, m, lo, hi, 100 * m / step, 100 * lo / step, 100 * hi / step))
    if args.out:
        write_result(args.out, {"bench": "probe_lightning_overhead", "torch": torch_version, "python": platform.python_version(), "cpus": os.cpu_count(), "width": args.width, "processes": args.processes, "blocks": args.blocks, "blockIterations": args.block_iterations, "baseline": args.baseline, "rows": rows})


if __name__ == "__main__":
    main()
