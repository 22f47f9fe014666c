"""What timing DDP's all-reduces costs a training step (issue 40: at most 2% of the step).

The probe times DDP's gradient sync one of two ways (collectives.py): once a step from the stamps DDP's reducer keeps
itself (the default), or bucket by bucket through a communication hook, where DDP's own all-reduce (C++) is replaced
by torch's default Python hook, wrapped to record arrival and completion. Five DDP models of the same MLP (a step of
about --step-ms on one thread, --buckets gradient buckets) train in blocks of iterations in ABBA order, on --ranks
ranks of one gloo process group (2 by default; with one, DDP's own path may skip work a Python hook does, which would
charge the hook for it), all ranks in lockstep, rank 0 measuring:

- plain: DDP as the script made it (the built-in all-reduce);
- rate: DDP stamping every iteration, never read (what asking for the stamps costs);
- stamps: the probe's per-step timing (DDP's stamps at every iteration, read at the step ends it can afford:
  stamp_poller's budget of 1% of the step);
- every: the same, read at every step's end (what a read costs);
- hook: torch's default all-reduce hook, untimed (what registering any Python hook costs);
- timed: the probe's per-bucket timed hook (what it adds, all told).

Per step: rank 0's wall time and its process's CPU time (gloo's threads too). The cost is the mean over rounds of the
paired block means, with its 95% interval (t), in µs and as a share of the plain step. The per-bucket hook needs torch
2 (the probe declines it on 1.x); here it is measured on both.

    python3 bench/script/collectives_overhead.py [--rounds 20] [--block 40] [--step-ms 5] [--buckets 4] [--ranks 2] [--out FILE]
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "resources", "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks  # noqa: E402

from collector import write_result  # noqa: E402
from trainbench_probe.collectives import READ_BUDGET, Collectives, _timed, stamp_poller  # noqa: E402

T95 = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 8: 2.36, 10: 2.26, 15: 2.14, 20: 2.09, 30: 2.05}


def t95(n):
    return T95.get(n) or T95[max(k for k in T95 if k <= n)]


def interval(xs):
    m = statistics.mean(xs)
    if len(xs) < 2:
        return m, m, m
    h = t95(len(xs)) * statistics.stdev(xs) / len(xs) ** 0.5
    return m, m - h, m + h


def model(width, buckets, which, collectives):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
    params_mb = sum(p.numel() * 4 for p in net.parameters()) / 2**20
    ddp = torch.nn.parallel.DistributedDataParallel(net, bucket_cap_mb=params_mb / buckets)
    if which == "hook":
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
    elif which == "timed":
        ddp.register_comm_hook(None, _timed(default_hooks.allreduce_hook, collectives))
    elif which == "rate":
        ddp._set_ddp_runtime_logging_sample_rate(1)  # stamped at every iteration, never read
    elif which in ("stamps", "every"):
        # As watch_ddp does: every iteration stamped, read at step ends (Collectives.take), as the budget allows or always.
        ddp._set_ddp_runtime_logging_sample_rate(1)
        budget = None if which == "every" else READ_BUDGET
        collectives.pollers.append(stamp_poller(lambda: [ddp], collectives, print, lambda m: None, budget=budget))
    return ddp, torch.optim.SGD(ddp.parameters(), lr=0.001)


def block(ddp, opt, x, y, n, collectives):
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        collectives.take()  # as the probe does at each step's end
    return (time.perf_counter() - w0) / n * 1e6, (time.process_time() - c0) / n * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--block", type=int, default=40)
    p.add_argument("--step-ms", type=float, default=5.0)
    p.add_argument("--buckets", type=int, default=4)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    # The parent holds the store; the ranks run the same schedule in lockstep (their all-reduces meet), rank 0 reports.
    store = dist.TCPStore("127.0.0.1", 0, None, True, datetime.timedelta(seconds=60), wait_for_workers=False)
    torch.multiprocessing.spawn(rank_main, args=(a, store.port), nprocs=a.ranks)


def rank_main(rank, a, port):
    torch.set_num_threads(1)
    store = dist.TCPStore("127.0.0.1", port, a.ranks, False, datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=a.ranks)
    x, y = torch.randn(64, 1), torch.randint(0, 10, (64,))
    # Width for the step: grown until a plain step takes about --step-ms.
    width = 64
    while True:
        x = torch.randn(64, width)
        ddp, opt = model(width, a.buckets, "plain", Collectives())
        block(ddp, opt, x, y, 10, Collectives())  # warm: gloo's first rounds and DDP's bucket rebuild are slow
        done = torch.tensor([1 if block(ddp, opt, x, y, 20, Collectives())[0] >= a.step_ms * 1000 or width > 8192 else 0])
        dist.broadcast(done, 0)  # every rank sizes the same model
        if done.item():
            break
        width = int(width * 1.25)
    kinds = ("plain", "rate", "stamps", "every", "hook", "timed")
    collectives = {k: Collectives() for k in kinds}
    models = {k: model(width, a.buckets, k, collectives[k]) for k in kinds}
    for k in kinds:
        block(*models[k], x, y, 10, collectives[k])  # warm: DDP rebuilds its buckets after the first step
    got = {k: {"wall": [], "cpu": []} for k in kinds}
    for r in range(a.rounds):
        order = list(kinds) + list(reversed(kinds)) if r % 2 == 0 else list(reversed(kinds)) + list(kinds)
        seen = {k: [] for k in kinds}
        for k in order:
            seen[k].append(block(*models[k], x, y, a.block, collectives[k]))
        for k in kinds:
            got[k]["wall"].append(statistics.mean(s[0] for s in seen[k]))
            got[k]["cpu"].append(statistics.mean(s[1] for s in seen[k]))
    seen_buckets = len(_timed_probe(width, a.buckets, x, y))
    # The per-step timing really read a step: one collective spanning the buckets (else its cost would be nothing's).
    stamped = _stamped(models["every"][0], x, y, collectives["every"])
    read = _steps_read(*models["stamps"], x, y, collectives["stamps"])
    if rank != 0:
        dist.destroy_process_group()
        return
    plain_wall = statistics.mean(got["plain"]["wall"])
    rows = []
    for name, k, base in (
        ("per step: DDP's stamps vs DDP's own all-reduce", "stamps", "plain"),
        ("per step: stamping every iteration alone (unread)", "rate", "plain"),
        ("per step: reading the stamps as the budget allows", "stamps", "rate"),
        ("per step: DDP's stamps read at every step's end", "every", "plain"),
        ("per step: reading the stamps at every step's end", "every", "rate"),
        ("per bucket: the timed hook vs DDP's own all-reduce", "timed", "plain"),
        ("per bucket: timing alone (timed vs untimed hook)", "timed", "hook"),
        ("a Python hook vs DDP's own", "hook", "plain"),
    ):
        wall = interval([b - c for b, c in zip(got[k]["wall"], got[base]["wall"])])
        cpu = interval([b - c for b, c in zip(got[k]["cpu"], got[base]["cpu"])])
        rows.append({"comparison": name, "wallUs": wall, "cpuUs": cpu, "wallPercentOfStep": [100 * v / plain_wall for v in wall]})
    print("step %.0f µs (plain, width %d, %d buckets, %d ranks on gloo), %d rounds of ABBA blocks of %d steps; torch %s, load %.2f" % (plain_wall, width, seen_buckets, a.ranks, a.rounds, a.block, torch.__version__, os.getloadavg()[0]))
    print("per step, one step read: %s; within the budget, %d of 64 steps read" % (json.dumps(stamped), read))
    print("%-52s %26s %26s %22s" % ("comparison", "wall µs/step [95%]", "CPU µs/step [95%]", "% of the step [95%]"))
    for row in rows:
        w, c, pc = row["wallUs"], row["cpuUs"], row["wallPercentOfStep"]
        print("%-52s %8.1f [%7.1f, %7.1f] %8.1f [%7.1f, %7.1f] %6.2f [%5.2f, %5.2f]" % (row["comparison"], w[0], w[1], w[2], c[0], c[1], c[2], pc[0], pc[1], pc[2]))
    result = {
        "bench": "collectives-overhead",
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg": os.getloadavg(),
        "ranks": a.ranks,
        "stepUs": plain_wall,
        "width": width,
        "buckets": seen_buckets,
        "stamped": stamped,
        "budgetStepsReadOf64": read,
        "rounds": a.rounds,
        "block": a.block,
        "rows": rows,
        "raw": got,
    }
    if a.out:
        write_result(a.out, result)
    dist.destroy_process_group()


def _stamped(ddp, x, y, collectives):
    """What the per-step timing recorded for one more step."""
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    return collectives.take()


def _steps_read(ddp, opt, x, y, collectives, n=64):
    """Of `n` more steps, how many the budgeted reading read."""
    read = 0
    for _ in range(n):
        loss = torch.nn.functional.cross_entropy(ddp(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        read += len(collectives.take())
    return read


def _timed_probe(width, buckets, x, y):
    """The buckets the timed model's step really has (DDP may merge small ones)."""
    c = Collectives()
    ddp, opt = model(width, buckets, "timed", c)
    block(ddp, opt, x, y, 3, c)  # each step's collectives taken at its end: after the rebuild, one step's are left
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    return c.take()


if __name__ == "__main__":
    main()
