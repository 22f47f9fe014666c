"""What the probe costs a training iteration (issue 38: at most 2% of a 5 ms step), measured two ways.

The loop is a plain one: an MLP sized for a step of about --step-ms on one thread, a DataLoader over a
TensorDataset (batches of 64), SGD, loss.item() each step as loops log it. The probe is injected as
Trainbench launches it (PYTHONPATH to its sitecustomize, TB_PROBE_ADDR), its messages read by this process.

- processes: the loop at the --step-ms step in separate processes, without the probe, with this checkout's
  and (--baseline) with another copy's, in ABBA order (A B C C B A a round), so a drift of the machine hits
  all alike. Per iteration: wall time, the main thread's CPU time, the process's (every thread: the probe's
  flusher too) and its page faults. The cost is the mean over pairs of processes side by side, with its
  95% interval. glibc's heap trimming is pinned in every process (--malloc): left as it comes, a process
  draws 0 to 400 page faults a step, ±4% of a 5 ms step whether the probe is there or not. A last row,
  "modules", loads the probe's modules and installs nothing: what a process's layout alone moves the figure.
- toggled: in a process with the probe (two, each with half the blocks; with --baseline the two probes'
  processes in turns, ABBA), blocks of iterations alternate (ABBA) between the probe's
  patches in place and set aside (its DataLoader.__next__, autograd.backward, optimizer step and zero_grad
  wrappers, its module hooks): the probe's own work in µs of thread CPU time, free of the differences
  between processes, at the --step-ms step and at a tiny one (--tiny-width) where the µs are precise.
  The tiny step is measured twice: as it is, everything in cache, and with the caches emptied between its
  phases (--evict-mb copied between the fetch, forward, backward and step: a large model's step does that
  to the caches), because the probe's Python between a step's large operations runs from memory, not cache:
  at the 5 ms step it cost 1.3 to 3.7 times what it costs in a tiny step that stays in cache.
  Between processes the same loop's step differs by ±150 µs (where its memory lands), so the processes'
  figure has a wide interval; this one is the precise one, and the processes' says nothing is missed.
  The patches are found after the warm-up, as they stand in a run (the probe's zero_grad wrapper goes after its
  first call; found before, it was switched back on in every "on" block and counted).
  Blocks are short (--block-seconds 0.025: 5 iterations at the 5 ms step, the first left out) because the
  machine drifts between blocks: with 0.1 s blocks the 5 ms step's interval was ±90 µs (2026-12-07, torch
  2.13), with 5-iteration blocks ±12 µs over the same time; 3, 5 and 10 iterations gave the same cost within
  their intervals, so the switch's cost ends with the iteration left out.

CPU time is the figure to read on a loaded machine (wall time moves with whatever else runs); the load
average is printed beside each measurement.

    python3 bench/script/probe_step_overhead.py [--python PY] [--rounds 6] [--iterations 400] [--step-ms 5]
        [--blocks 2000] [--block-seconds 0.025] [--baseline DIR] [--malloc pinned|default] [--out FILE]

DIR is another resources/python folder (its sitecustomize.py and trainbench_probe/), e.g. an older
commit's: `git archive HEAD resources/python | tar -x -C /tmp/before`. Prints tables and writes JSON (--out).
"""
import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from collector import drain_server, write_result

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(ROOT, "resources", "python")
BATCH = 64
WARMUP = 30  # iterations left out at the start: the probe settles its hooks and counts FLOPs in its first ones


# ---- inside the measured process -------------------------------------------------------------------
def probe_patches(torch, model):
    """Switches the probe's per-iteration patches off and on again: (off, on) functions, or None without a probe."""
    from torch.utils.data import dataloader

    def ours(f):
        code = getattr(f, "__code__", None)
        return code is not None and "trainbench_probe" in code.co_filename and hasattr(f, "__wrapped__")

    owners = [torch.autograd, torch.nn.Module]
    stack = [dataloader._BaseDataLoaderIter, torch.optim.Optimizer]
    while stack:
        cls = stack.pop()
        owners.append(cls)
        stack.extend(cls.__subclasses__())
    wrappers = [(o, n, o.__dict__[n]) for o in owners for n in ("__next__", "step", "zero_grad", "backward") if ours(o.__dict__.get(n))]
    hooks = [d for m in model.modules() for d in (m._forward_pre_hooks, m._forward_hooks)]
    if not wrappers:
        return None
    saved = []

    def off():
        for owner, name, f in wrappers:
            setattr(owner, name, f.__wrapped__)
        saved[:] = [dict(d) for d in hooks]
        for d in hooks:
            d.clear()

    def on():
        for owner, name, f in wrappers:
            setattr(owner, name, f)
        for d, s in zip(hooks, saved):
            d.update(s)

    return off, on


def worker(iterations, width, blocks, block_iterations, evict_mb=0):
    """The loop. Prints, as JSON, the mean wall, thread CPU and process CPU time of an iteration (µs) after the warm-up;
    with blocks (toggled), the thread CPU time of each block, its state and the probe's patches found."""
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    epoch = 200  # batches a pass: the data stays small, a new iterator every 200 iterations costs both sides alike
    data = TensorDataset(torch.randn(BATCH * epoch, 256), torch.randint(0, 10, (BATCH * epoch,)))
    loader = DataLoader(data, batch_size=BATCH)
    patches = None  # found after the warm-up: what the probe keeps in place by then (its zero_grad wrapper goes after the first call)
    # Copied between the phases (--evict-mb): the caches hold none of the probe's code and data when it runs.
    src, dst = (torch.ones(evict_mb << 18), torch.zeros(evict_mb << 18)) if evict_mb else (None, None)

    def evict():
        if src is not None:
            dst.copy_(src)

    total = WARMUP + (blocks * block_iterations if blocks else iterations)
    wall, thread, proc, faults = [], [], [], []
    batches = iter(loader)
    t, c, p = time.perf_counter(), time.thread_time(), time.process_time()
    for i in range(total):
        if blocks and i == WARMUP:
            patches = probe_patches(torch, model)
        if i == WARMUP or patches and i > WARMUP and (i - WARMUP) % block_iterations == 0:
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
        if patches and i >= WARMUP and (i - WARMUP) % block_iterations == 0:
            b = (i - WARMUP) // block_iterations
            (patches[1] if _block_on(b) else patches[0])()
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        evict()
        out = model(x)
        evict()
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        evict()
        opt.step()
        evict()
        loss.item()
        t1, c1, p1 = time.perf_counter(), time.thread_time(), time.process_time()
        wall.append((t1 - t) * 1e6)
        thread.append((c1 - c) * 1e6)
        proc.append((p1 - p) * 1e6)
        t, c, p = t1, c1, p1
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)
    if patches:
        # The first iteration of a block pays for the switch: left out.
        out = {
            "blocks": [
                {
                    "on": _block_on(b),
                    "threadUs": statistics.mean(thread[WARMUP + b * block_iterations + 1 : WARMUP + (b + 1) * block_iterations]),
                    "faults": (faults[b + 1] - faults[b]) / block_iterations,
                }
                for b in range(blocks)
            ]
        }
    else:
        out = {
            "wallUs": statistics.mean(wall[WARMUP:]),
            "threadUs": statistics.mean(thread[WARMUP:]),
            "processUs": statistics.mean(proc[WARMUP:]),
            "faults": (faults[-1] - faults[0]) / (total - WARMUP),
        }
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)  # the probe's atexit would send its totals to a socket nobody reads now


def _block_on(b):
    """ABBA over blocks: on, off, off, on, on, off, ..."""
    return b % 4 in (0, 3)


# ---- the driver ------------------------------------------------------------------------------------
# glibc returns freed heap to the system once its top passes a threshold it adapts as it goes, so a process
# takes a chance number of page faults a step (0 to 400 here, each ~1 µs, with or without the probe). Pinned
# (both sides alike, the script's own step unchanged): no trimming, big blocks from the heap, no faults.
PINNED_MALLOC = {"MALLOC_TRIM_THRESHOLD_": str(1 << 30), "MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TOP_PAD_": str(64 << 20)}


def launch(args, probe_dir, addr, iterations, width, blocks=0, block_iterations=0, evict_mb=0):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in ("PYTHONPATH", "TB_PROBE_ADDR", "TB_PROBE_STEPS", "TB_PROBE_WARMUP", *PINNED_MALLOC):
        env.pop(k, None)
    if args.malloc == "pinned":
        env.update(PINNED_MALLOC)
    if probe_dir:
        env.update(PYTHONPATH=probe_dir, TB_PROBE_ADDR=addr)
    cmd = [args.python, os.path.abspath(__file__), "--worker", "--iterations", str(iterations), "--width", str(width), "--blocks", str(blocks), "--block-iterations", str(block_iterations), "--worker-evict-mb", str(evict_mb)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        raise SystemExit("worker failed (%d):\n%s" % (out.returncode, out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def modules_only(folder):
    """A copy of the probe whose sitecustomize loads the probe's modules and installs nothing: its row in the
    processes' table is what merely loading them moves between processes (memory laid out otherwise), the
    precision below which the processes' figure says nothing about the probe's own work."""
    shutil.copytree(PROBE, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    site = os.path.join(folder, "sitecustomize.py")
    with open(site) as f:
        text = f.read()
    if "trainbench_probe.install()" not in text:
        raise SystemExit("the probe's sitecustomize no longer calls trainbench_probe.install(): update modules_only()")
    with open(site, "w") as f:
        f.write(text.replace("trainbench_probe.install()", "pass  # the modules loaded, nothing installed"))
    return folder


def load():
    return round(os.getloadavg()[0], 2)


def interval(values, seed=0):
    """95% bootstrap interval of the mean."""
    rnd = random.Random(seed)
    boots = sorted(statistics.mean(rnd.choices(values, k=len(values))) for _ in range(4000))
    return [boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]]


def processes(args, addr, configs):
    """ABBA over processes (A B C C B A a round): each process with a probe paired with the one without beside it."""
    runs = {name: [] for name, _ in configs}
    loads = [load()]
    for _ in range(args.rounds):
        for name, probe_dir in configs + configs[::-1]:
            runs[name].append(launch(args, probe_dir, addr, args.iterations, args.width))
        loads.append(load())
    base = runs["none"]
    rows = []
    for name, _ in configs:
        row = {"config": name, "processes": len(runs[name]), "faultsPerIteration": statistics.mean(r["faults"] for r in runs[name]), "threadUsEach": [round(r["threadUs"], 1) for r in runs[name]]}
        for key in ("wallUs", "threadUs", "processUs"):
            row[key] = statistics.mean(r[key] for r in runs[name])
            if name != "none":
                diffs = [r[key] - b[key] for r, b in zip(runs[name], base)]
                row[key.replace("Us", "CostUs")] = statistics.mean(diffs)
                row[key.replace("Us", "CostUs95")] = interval(diffs)
                row[key.replace("Us", "CostPercent")] = 100 * statistics.mean(diffs) / statistics.mean(b[key] for b in base)
        rows.append(row)
    return {"rows": rows, "loadAverage": loads}


def toggled_blocks(args, addr, probe_dir, width, block_iterations, evict_mb, blocks):
    """One process's blocks with the probe's patches on and off, paired in ABBA order: (on, off, faults on, faults off)."""
    got = launch(args, probe_dir, addr, 0, width, blocks, block_iterations, evict_mb)["blocks"]
    on = [b["threadUs"] for b in got if b["on"]]
    off = [b["threadUs"] for b in got if not b["on"]]
    return on, off, [b["faults"] for b in got if b["on"]], [b["faults"] for b in got if not b["on"]]


def toggled(args, addr, probes, width, block_iterations, evict_mb=0):
    """The probe's own cost, for each probe folder: its blocks split over two processes, the probes' processes in ABBA
    order. Run one after the other, the first probe's cost at the 5 ms step read higher than the second's in 4 runs of
    4, whichever probe was first (issue 38): a comparison of two probes is only fair in turns."""
    l0 = load()
    parts = {name: ([], [], [], []) for name, _ in probes}
    order = probes + probes[::-1]
    for name, d in order:
        got = toggled_blocks(args, addr, d, width, block_iterations, evict_mb, max(4, args.blocks // 2))
        for pooled, more in zip(parts[name], got):
            pooled.extend(more)
    l1 = load()
    out = {}
    for name, (on, off, faults_on, faults_off) in parts.items():
        diffs = [a - b for a, b in zip(on, off)]
        out[name] = {
            "threadUsOn": statistics.mean(on),
            "threadUsOff": statistics.mean(off),
            "costUs": statistics.mean(diffs),
            "costUs95": interval(diffs),
            "ofStepPercent": 100 * statistics.mean(diffs) / statistics.mean(off),
            "ofFiveMsStepPercent": 100 * statistics.mean(diffs) / 5000,
            "faultsOn": statistics.mean(faults_on),
            "faultsOff": statistics.mean(faults_off),
            "width": width,
            "blockIterations": block_iterations,
            "evictMb": evict_mb,
            "processes": 2,
            "loadAverage": [l0, l1],
        }
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=6, help="ABBA rounds of processes")
    parser.add_argument("--iterations", type=int, default=400, help="measured iterations a process")
    parser.add_argument("--width", type=int, default=0, help="hidden width (0: sized for --step-ms)")
    parser.add_argument("--step-ms", type=float, default=5.0)
    parser.add_argument("--tiny-width", type=int, default=8, help="hidden width of the tiny step the toggled cost is also measured at")
    parser.add_argument("--blocks", type=int, default=2000, help="toggled blocks (half with the probe's patches)")
    parser.add_argument("--evict-mb", type=int, default=8, help="MB copied between the tiny step's phases in its caches-emptied row")
    parser.add_argument("--block-seconds", type=float, default=0.025, help="about how long a toggled block runs (at least 5 iterations)")
    parser.add_argument("--malloc", choices=("pinned", "default"), default="pinned", help="glibc's heap trimming pinned in every process, or as it comes")
    parser.add_argument("--baseline", help="another resources/python folder to compare (an older commit's)")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--block-iterations", type=int, default=0, help=argparse.SUPPRESS)  # the worker's
    parser.add_argument("--worker-evict-mb", type=int, default=0, help=argparse.SUPPRESS)  # the worker's: nothing evicted unless asked
    args = parser.parse_args()
    if args.worker:
        return worker(args.iterations, args.width, args.blocks, args.block_iterations, args.worker_evict_mb)

    addr = drain_server()
    if args.width == 0:
        # Size the hidden layers so a step without the probe takes about --step-ms here (CPU time: load does not move it).
        args.width = 512
        for _ in range(4):
            ms = launch(args, None, addr, 60, args.width)["threadUs"] / 1000
            args.width = max(16, int(args.width * (args.step_ms / ms) ** 0.5))
    version = subprocess.run([args.python, "-c", "import torch, platform; print(torch.__version__, platform.python_version())"], capture_output=True, text=True, check=True).stdout.split()
    probes = [("probe", PROBE)] + ([("baseline", os.path.abspath(args.baseline))] if args.baseline else [])

    with tempfile.TemporaryDirectory(prefix="trainbench-probe-modules-") as modules:
        by_process = processes(args, addr, [("none", None)] + probes + [("modules", modules_only(modules))])
    step_us = by_process["rows"][0]["threadUs"]
    tiny_us = launch(args, None, addr, 100, args.tiny_width)["threadUs"]
    cold_us = launch(args, None, addr, 100, args.tiny_width, evict_mb=args.evict_mb)["threadUs"]
    steps = (("step", args.width, step_us, 0), ("tiny", args.tiny_width, tiny_us, 0), ("tinyEvicted", args.tiny_width, cold_us, args.evict_mb))
    by_toggle = {size: toggled(args, addr, probes, width, max(5, int(args.block_seconds * 1e6 / us)), evict) for size, width, us, evict in steps}

    print("probe step overhead: torch %s, Python %s, %d CPUs, malloc %s" % (version[0], version[1], os.cpu_count(), args.malloc))
    print(
        "\nprocesses, a %.2f ms step (hidden width %d): %d ABBA rounds of %d iterations a process, load average %s"
        % (step_us / 1000, args.width, args.rounds, args.iterations, " -> ".join("%.2f" % x for x in by_process["loadAverage"]))
    )
    print("  %-9s %10s %10s %10s %8s  %-28s %-24s" % ("config", "wall µs", "thread µs", "process µs", "faults", "process CPU cost µs [95%]", "of the step (wall)"))
    for r in by_process["rows"]:
        cost = "%+7.1f [%+.1f, %+.1f]" % (r["processCostUs"], *r["processCostUs95"]) if "processCostUs" in r else ""
        share = "%+.2f%% (%+.2f%%)" % (r["processCostPercent"], r["wallCostPercent"]) if "processCostUs" in r else ""
        print("  %-9s %10.1f %10.1f %10.1f %8.1f  %-28s %-24s" % (r["config"], r["wallUs"], r["threadUs"], r["processUs"], r["faultsPerIteration"], cost, share))
    print("\ntoggled: %d blocks with the probe's patches on and off (ABBA) in two processes each, the probes' in turns, thread CPU time" % args.blocks)
    print("  %-24s %-9s %10s %10s %24s %10s %16s %10s %14s" % ("step", "config", "on µs", "off µs", "cost µs [95%]", "of step", "of a 5 ms step", "faults", "load"))
    for size, width, us, evict in steps:
        for name, r in by_toggle[size].items():
            print(
                "  %-24s %-9s %10.1f %10.1f %24s %9.2f%% %15.2f%% %10s %14s"
                % (
                    "%.2f ms (w %d%s)" % (us / 1000, width, ", evicted" if evict else ""),
                    name,
                    r["threadUsOn"],
                    r["threadUsOff"],
                    "%.1f [%.1f, %.1f]" % (r["costUs"], *r["costUs95"]),
                    r["ofStepPercent"],
                    r["ofFiveMsStepPercent"],
                    "%.1f/%.1f" % (r["faultsOn"], r["faultsOff"]),
                    "%.2f -> %.2f" % tuple(r["loadAverage"]),
                )
            )
    result = {
        "bench": "probe-step-overhead",
        "torch": version[0],
        "python": version[1],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "malloc": args.malloc,
        "width": args.width,
        "stepUs": step_us,
        "iterations": args.iterations,
        "rounds": args.rounds,
        "baseline": os.path.abspath(args.baseline) if args.baseline else None,
        "processes": by_process,
        "toggled": dict(by_toggle, blocks=args.blocks),
    }
    if args.out:
        write_result(args.out, result)


if __name__ == "__main__":
    main()
