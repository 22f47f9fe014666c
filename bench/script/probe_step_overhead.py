"""What the probe costs a training iteration, against the script's own timing (issue 38: at most 2% of a 5 ms step).

A plain loop (an MLP sized for a step of about --step-ms on one thread, a DataLoader over a TensorDataset,
SGD, loss.item() each step as loops log it) times every iteration with perf_counter, as the script's own
timing would. It runs in separate processes without the probe and with it (injected as Trainbench launches
it: PYTHONPATH and TB_PROBE_ADDR, the messages drained by this process), in ABBA order so a drift of the
machine hits both alike. The overhead is the median iteration with the probe over the median without,
per pair of processes, then the median over the pairs; per iteration in µs too.

    python3 bench/script/probe_step_overhead.py [--rounds 4] [--iterations 400] [--step-ms 5] [--out FILE]

Prints a table and writes JSON (--out).
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(ROOT, "resources", "python")


def worker(iterations, width):
    """The loop: prints the per-iteration times (µs) after a warm-up, as JSON."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = 64
    data = TensorDataset(torch.randn(batch * (iterations + 20), 256), torch.randint(0, 10, (batch * (iterations + 20),)))
    times = []
    t = time.perf_counter()
    for x, y in DataLoader(data, batch_size=batch):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()
        now = time.perf_counter()
        times.append((now - t) * 1e6)
        t = now
    print(json.dumps(times[20:]))


def run(python, probe, args, addr):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("PYTHONPATH", "TB_PROBE_ADDR"):
        env.pop(k, None)
    if probe:
        env.update(PYTHONPATH=PROBE, TB_PROBE_ADDR=addr)
    cmd = [python, os.path.abspath(__file__), "--worker", "--iterations", str(args.iterations), "--width", str(args.width)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4, help="ABBA rounds: each runs two processes a side")
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--width", type=int, default=0, help="hidden width (0: sized for --step-ms)")
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.iterations, args.width)

    addr = drain_server()
    if args.width == 0:
        # Size the hidden layers so a step without the probe takes about --step-ms on this machine.
        args.width = 512
        for _ in range(4):
            args.iterations, full = 60, args.iterations
            ms = statistics.median(run(args.python, False, args, addr)) / 1000
            args.iterations = full
            args.width = max(16, int(args.width * (args.step_ms / ms) ** 0.5))
    pairs = []
    off_all, on_all = [], []
    for r in range(args.rounds):
        # A B B A: the order inside a round flips, so a drift across the round cancels.
        a1 = run(args.python, False, args, addr)
        b1 = run(args.python, True, args, addr)
        b2 = run(args.python, True, args, addr)
        a2 = run(args.python, False, args, addr)
        for off, on in ((a1, b1), (a2, b2)):
            pairs.append(statistics.median(on) / statistics.median(off) - 1)
            off_all += off
            on_all += on
    off_ms, on_ms = statistics.median(off_all) / 1000, statistics.median(on_all) / 1000
    overhead = statistics.median(pairs) * 100
    version = subprocess.run([args.python, "-c", "import torch, platform; print(torch.__version__, platform.python_version())"], capture_output=True, text=True, check=True).stdout.split()
    print("probe step overhead: torch %s, Python %s, hidden width %d, %d iterations a process, %d ABBA rounds" % (version[0], version[1], args.width, args.iterations, args.rounds))
    print("%-10s %12s %12s %16s %12s" % ("", "step ms", "with probe", "per iteration µs", "overhead"))
    print("%-10s %12.3f %12.3f %16.1f %11.2f%%" % ("median", off_ms, on_ms, (on_ms - off_ms) * 1000, overhead))
    print("pairs: " + ", ".join("%+.2f%%" % (100 * p) for p in pairs))
    result = {
        "bench": "probe-step-overhead",
        "torch": version[0],
        "python": version[1],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadAverage": os.getloadavg(),
        "width": args.width,
        "iterations": args.iterations,
        "rounds": args.rounds,
        "stepMs": off_ms,
        "stepMsWithProbe": on_ms,
        "perIterationUs": (on_ms - off_ms) * 1000,
        "overheadPercent": overhead,
        "pairOverheadPercent": [100 * p for p in pairs],
    }
    if args.out:
        write_result(args.out, result)


if __name__ == "__main__":
    main()
