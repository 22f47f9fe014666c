"""What the probe's module hooks cost each module call, on a forward of many small modules.

A model of --modules Linear(4, 4) layers in one Sequential (so one forward is modules + 1 module
calls) runs forward passes in training mode with grad enabled, as a training loop does, under:
  none         no probe
  probe        this checkout's probe, after its first iterations (hooks left on the model alone)
  discovering  this checkout's probe before an iteration has closed (hooks on every module)
  baseline     another copy of the probe (--baseline DIR, e.g. an older commit's resources/python)
Each configuration runs in its own process (a probe cannot be taken out of one), the processes
alternating (A B C A B C ...); inside each, blocks of forwards alternate with the hooks on and set
aside, so the cost per module call is (median on - median off) / calls in one forward, free of the
few-percent differences between processes. "vs no probe" compares with the process without one.
Prints a table and writes JSON (--out).

    python3 bench/script/probe_hook_overhead.py [--modules 400] [--rounds 5] [--baseline DIR] [--out FILE]
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


def worker(probe_dir, train_first, modules, forwards):
    """One configuration in this process: prints the forward times (µs) as JSON."""
    if probe_dir:
        os.environ["TB_PROBE_ADDR"] = drain_server()
        sys.path.insert(0, probe_dir)
        import trainbench_probe

        trainbench_probe.install()
    import torch
    from torch import nn

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(modules)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(2, 4)
    if train_first:
        for _ in range(4):  # the probe settles its hooks after the first iterations
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    # Blocks alternate hooks on and off inside this one process (ABAB), so process-to-process noise
    # (memory layout, another job's load) cancels: off = every forward hook the model's modules and
    # torch's global tables hold, set aside for that block.
    module_mod = torch.nn.modules.module
    tables = [getattr(module_mod, n) for n in ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_always_called") if hasattr(module_mod, n)]
    for m in model.modules():
        tables += [m._forward_pre_hooks, m._forward_hooks] + ([m._forward_hooks_always_called] if hasattr(m, "_forward_hooks_always_called") else [])
    times = {"on": [], "off": []}
    block = max(1, forwards // 20)
    for b in range(40):
        state = "on" if b % 2 == 0 else "off"
        saved = [dict(t) for t in tables] if state == "off" else None
        if saved:
            for t in tables:
                t.clear()
        for i in range(block):
            t0 = time.perf_counter()
            model(x)
            if i >= block // 10:  # the block's first forwards warm caches
                times[state].append((time.perf_counter() - t0) * 1e6)
        if saved:
            for t, d in zip(tables, saved):
                t.update(d)
    print(json.dumps(times))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5, help="processes per configuration, alternating")
    parser.add_argument("--forwards", type=int, default=400, help="timed forwards per process")
    parser.add_argument("--baseline", help="another probe folder (holding trainbench_probe/) to compare")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        probe_dir, train_first = args.worker
        return worker(probe_dir if probe_dir != "-" else None, train_first == "1", args.modules, args.forwards)

    configs = [("none", "-", "1"), ("probe", PROBE, "1"), ("discovering", PROBE, "0")]
    if args.baseline:
        configs.append(("baseline", os.path.abspath(args.baseline), "1"))
    samples = {name: {"on": [], "off": []} for name, _, _ in configs}
    env = dict(os.environ, PYTHONPATH="", OMP_NUM_THREADS="1")
    env.pop("TB_PROBE_ADDR", None)
    for _ in range(args.rounds):
        for name, probe_dir, train_first in configs:
            cmd = [args.python, os.path.abspath(__file__), "--worker", probe_dir, train_first, "--modules", str(args.modules), "--forwards", str(args.forwards)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            for state in ("on", "off"):
                samples[name][state].extend(got[state])
    import torch  # noqa: F401 (only its version, for the record)

    calls = args.modules + 1
    base = statistics.median(samples["none"]["on"])
    rows = []
    for name, _, _ in configs:
        on, off = statistics.median(samples[name]["on"]), statistics.median(samples[name]["off"])
        rows.append(
            {
                "config": name,
                "forwardUsMedian": on,
                "forwardUsHooksOff": off,
                "perCallOverheadUs": (on - off) / calls,
                "overheadPercent": (on / off - 1) * 100,
                "againstNoProbePercent": (on / base - 1) * 100,
                "forwards": len(samples[name]["on"]),
            }
        )
    print("probe hook overhead: %d-module forward (%d module calls), Python %s, torch %s, %d rounds, hooks on/off alternating in each process" % (args.modules, calls, platform.python_version(), sys.modules["torch"].__version__, args.rounds))
    print("%-12s %12s %14s %20s %10s %14s" % ("config", "forward µs", "hooks off µs", "per module call µs", "overhead", "vs no probe"))
    for r in rows:
        print("%-12s %12.1f %14.1f %20.3f %9.1f%% %13.1f%%" % (r["config"], r["forwardUsMedian"], r["forwardUsHooksOff"], r["perCallOverheadUs"], r["overheadPercent"], r["againstNoProbePercent"]))
    result = {
        "bench": "probe-hook-overhead",
        "modules": args.modules,
        "moduleCalls": calls,
        "python": platform.python_version(),
        "torch": sys.modules["torch"].__version__,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadAverage": os.getloadavg(),
        "rounds": args.rounds,
        "baseline": os.path.abspath(args.baseline) if args.baseline else None,
        "rows": rows,
    }
    if args.out:
        write_result(args.out, result)


if __name__ == "__main__":
    main()
