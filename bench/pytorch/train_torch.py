"""PyTorch's side of the race: the same model, optimiser and cached data as the
engine, written as a skilled user would for this network: channels_last, AMP bf16,
a fused optimiser where PyTorch has one, cudnn.benchmark, a DataLoader with workers
and pinned memory; eager, or the whole training step (forward, loss, backward,
optimiser) under torch.compile(mode="max-autotune") with CUDA graphs, and a report
of whether the graphs were really used (cuda_graphs.py). Prints one JSON line:
samples/s over the timed steps and the mean milliseconds per step of each phase
(CUDA events, read once at the end, so timing does not stall the step); with
--census-steps N, the census of N more steps under torch.profiler (census.py).

    python3 bench/pytorch/train_torch.py --cache DIR --spec JSON \
        --batch 750 --steps 200 --warmup 30 --mode eager|compile --precision bf16|fp32 \
        [--compile-mode max-autotune] [--optimizer sgd|adamw] [--fused auto|on|off] [--census-steps N] \
        [--device cpu --threads N --workers 0|1 --memory-format channels_last|contiguous]
"""
import argparse
import inspect
import json
import math
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

sys.path.insert(0, os.path.dirname(__file__))
import census  # noqa: E402
import models  # noqa: E402
from cuda_graphs import CudaGraphWatch  # noqa: E402

DTYPES = {"bool": "?", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4",
          "int64": "<i8", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8"}


class CachedDataset(Dataset):
    """A trainbench cache (docs/cache-format.md), memory-mapped; one item is a whole batch of indices."""

    def __init__(self, directory: str, fields):
        with open(os.path.join(directory, "manifest.json")) as f:
            manifest = json.load(f)
        self.records = manifest["records"]
        self.per_shard = manifest["recordsPerShard"]
        self.fields = [f for f in manifest["fields"] if f["name"] in fields]
        self.stats = {f["name"]: f.get("stats") for f in manifest["fields"]}
        self.shards = []
        for shard in manifest["shards"]:
            mm = np.memmap(os.path.join(directory, shard["file"]), dtype=np.uint8, mode="r")
            arrays = {}
            for i, f in enumerate(manifest["fields"]):
                if f["name"] not in fields:
                    continue
                shape = tuple(f["shape"])
                count = shard["records"] * math.prod(shape)
                arrays[f["name"]] = np.frombuffer(mm, dtype=np.dtype(DTYPES[f["dtype"]]), count=count,
                                                  offset=shard["fieldOffsets"][i]).reshape((shard["records"],) + shape)
            self.shards.append(arrays)

    def __len__(self):
        return self.records

    def __getitem__(self, indices):
        idx = np.sort(np.asarray(indices))  # sorted reads are kinder to the page cache; order within a batch is irrelevant
        out = {}
        for f in self.fields:
            name = f["name"]
            parts = [self.shards[s][name][idx[idx // self.per_shard == s] % self.per_shard] for s in np.unique(idx // self.per_shard)]
            out[name] = torch.from_numpy(np.concatenate(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0]))
        return out


def fused_devices():
    """Device types with fused optimiser kernels in this PyTorch (CUDA only before it said)."""
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    except ImportError:
        return ["cuda"]
    return _get_fused_kernels_supported_devices()


def make_optimizer(params, args, device, compiled: bool):
    """The engine's optimiser as PyTorch runs it fastest. Eager: fused into one multi-tensor
    kernel where this PyTorch has that for the device (1.13 has none). Compiled (--fused auto):
    the foreach form, which dynamo traces into the step's graphs; it does not trace the fused
    kernel (torch.compiler.disable'd, "don't trace into fused optimizer"), which would run
    outside the CUDA graphs."""
    cls = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[args.optimizer]
    options = {"lr": args.lr, "weight_decay": args.weight_decay}
    if args.optimizer == "sgd":
        options["momentum"] = args.momentum
    info = {"kind": args.optimizer, **options, "fused": False, "foreach": None, "why": None}
    has_fused = "fused" in inspect.signature(cls).parameters
    if args.fused == "off":
        info["why"] = "--fused off"
    elif compiled and args.fused == "auto":
        return cls(params, foreach=True, **options), {**info, "foreach": True,
                                                      "why": "compiled: foreach, traced into the step's graphs (dynamo does not trace fused kernels)"}
    elif not has_fused:
        info["why"] = f"torch {torch.__version__} has no fused {args.optimizer}"
    elif device.type not in fused_devices():
        info["why"] = f"torch {torch.__version__} has no fused {args.optimizer} for {device.type}"
    else:
        return cls(params, fused=True, **options), {**info, "fused": True}
    return cls(params, **options), info


def compile_unavailable():
    """Why torch.compile cannot run here, or None."""
    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--spec", required=True, help="the engine's model spec (JSON), defaults filled")
    ap.add_argument("--batch", type=int, default=750)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--compile-mode", default="max-autotune",
                    help="torch.compile's mode for --mode compile (max-autotune: Triton autotuning and CUDA graphs)")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd", help="the engine's side of the race uses SGD")
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--fused", choices=["auto", "on", "off"], default="auto",
                    help="auto: fused=True where this PyTorch has it, eager; foreach when compiled; on: fused in both")
    ap.add_argument("--census-steps", type=int, default=0, help="after the timed steps, profile this many more (census.py)")
    ap.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1))
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--device", default="cuda", help="cuda, or cpu (the CPU race, bench/cpu/race.mjs)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads; 0 leaves PyTorch's default")
    ap.add_argument("--memory-format", choices=["channels_last", "contiguous"], default="channels_last",
                    help="layout of convolution activations and weights (oneDNN on the CPU may prefer either)")
    args = ap.parse_args()

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True  # tuned convolutions: PyTorch at its best
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("high")  # TF32 for what autocast leaves in fp32
    spec = json.loads(args.spec)
    input_shape = spec.get("input") or [104, 9, 9]
    fields = ["x", "policy", "value"] if spec["family"] == "bottleneck_resnet" else ["x", "y"]
    data = CachedDataset(args.cache, fields)
    x_stats = data.stats.get("x") or {}
    scale = 1.0 / x_stats["std"] if x_stats.get("std") else 1.0
    offset = -x_stats["mean"] * scale if x_stats.get("std") else 0.0  # the engine's normalisation of x

    sampler = BatchSampler(RandomSampler(data, replacement=False), args.batch, drop_last=True)
    on_gpu = args.device.startswith("cuda")
    # PyTorch 1.x refuses prefetch_factor (even None) without worker processes: pass it only with them.
    worker_options = {"persistent_workers": True, "prefetch_factor": 4} if args.workers > 0 else {}
    loader = DataLoader(data, sampler=sampler, batch_size=None, num_workers=args.workers, pin_memory=on_gpu, **worker_options)

    device = torch.device(args.device)
    if on_gpu and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    channels_last = args.memory_format == "channels_last" and spec["family"] != "mlp"
    model = models.build(spec).to(device).to(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    amp = torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16")
    not_compiled = compile_unavailable() if args.mode == "compile" else None
    compiled = args.mode == "compile" and not_compiled is None
    opt, optimizer_info = make_optimizer(list(model.parameters()), args, device, compiled)

    def prepare(gpu):
        # The model's input shape, as the engine reads it: a cache may store x flatter (Fashion-MNIST's 28x28 for
        # a 1x28x28 CNN). Out of place: an input mutated in place would keep inductor from capturing a CUDA graph.
        x = gpu["x"].float().reshape((-1, *input_shape)) * scale + offset
        return x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 and channels_last else x

    def whole_step(gpu):
        """One training step, compiled as a whole (dynamo breaks the graph at backward(): the forward with its
        AOT backward, and the optimiser step, each compiled and captured)."""
        with amp:
            loss = models.loss_fn(spec, model(prepare(gpu)), gpu)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    compile_info = {"requested": args.mode == "compile", "available": not_compiled is None if args.mode == "compile" else None,
                    "mode": args.compile_mode if compiled else None, "scope": "whole step" if compiled else None,
                    "why": not_compiled, "warmupSeconds": None}
    graphs = CudaGraphWatch(device, compiled, not_compiled)
    if args.mode == "compile" and not compiled:
        # Say so in the row rather than time eager under the compile row's name.
        print(json.dumps({"framework": f"pytorch {torch.__version__}", "mode": args.mode, "precision": args.precision,
                          "batch": args.batch, "steps": 0, "samplesPerSec": None, "stepMs": None, "phasesMs": {},
                          "compile": compile_info, "cudaGraphs": graphs.report(), "optimizer": optimizer_info,
                          "device": torch.cuda.get_device_name(device) if on_gpu else args.device}))
        return
    step = torch.compile(whole_step, mode=args.compile_mode) if compiled else whole_step
    mark_step = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None) if compiled and on_gpu else None

    def mark():
        if not on_gpu:
            return time.perf_counter()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def elapsed_ms(a, b):
        return a.elapsed_time(b) if on_gpu else 1000.0 * (b - a)

    def sync():
        if on_gpu:
            torch.cuda.synchronize(device)

    # Eager keeps events between its phases; the compiled step is one call (its phases are inside graphs),
    # timed under forward, as the engine's CUDA-graph row is.
    phases = ["data", "h2d", "forward"] if compiled else ["data", "h2d", "forward", "loss", "backward", "optimizer"]

    def run_step(gpu, ev):
        if compiled:
            if mark_step:
                mark_step()
            loss = step(gpu)
            ev.append(mark())
            return loss
        with amp:
            out = model(prepare(gpu))
            ev.append(mark())
            loss = models.loss_fn(spec, out, gpu)
        ev.append(mark())
        loss.backward()
        ev.append(mark())
        opt.step()
        opt.zero_grad(set_to_none=True)
        ev.append(mark())
        return loss

    it = iter(loader)

    def next_batch():
        nonlocal it
        try:
            return next(it)
        except StopIteration:
            it = iter(loader)
            return next(it)

    def run(n):
        """n steps; returns (per-step events, seconds waiting for the loader, the last loss)."""
        events, data_wait, loss = [], 0.0, None
        for _ in range(n):
            t0 = time.perf_counter()
            batch = next_batch()
            data_wait += time.perf_counter() - t0
            ev = [mark()]
            gpu = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
            ev.append(mark())
            loss = run_step(gpu, ev)
            events.append(ev)
        return events, data_wait, loss

    t_warm = time.perf_counter()
    run(args.warmup)
    sync()
    compile_info["warmupSeconds"] = time.perf_counter() - t_warm
    t_start = time.perf_counter()
    events, data_wait, loss = run(args.steps)
    final_loss = float(loss.detach().clone()) if loss is not None else None  # read before any later replay reuses it
    sync()
    seconds = time.perf_counter() - t_start
    ms = {p: 0.0 for p in phases}
    for ev in events:
        for i, p in enumerate(phases[1:]):
            ms[p] += elapsed_ms(ev[i], ev[i + 1])
    ms = {p: v / max(1, len(events)) for p, v in ms.items()}
    ms["data"] = 1000.0 * data_wait / max(1, len(events))
    cuda_graphs = graphs.report()
    step_ms = 1000.0 * seconds / args.steps if args.steps else None

    census_row = None
    if args.census_steps > 0:
        activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if on_gpu else [])
        try:
            with torch.profiler.profile(activities=activities) as prof:
                t0 = time.perf_counter()
                run(args.census_steps)
                sync()
                profiled_ms = 1000.0 * (time.perf_counter() - t0)
            census_row = {"device": device.type, **census.from_profiler(prof, args.census_steps, profiled_ms, step_ms)}
            if not on_gpu:
                census_row["note"] = "no CUDA activities on the CPU: device counts and kernels are empty"
        except Exception as err:  # the profiler and CUDA graphs have disagreed in some releases: keep the race's row
            census_row = {"device": device.type, "error": f"{type(err).__name__}: {err}"[:500]}

    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "mode": args.mode,
        "precision": args.precision,
        "batch": args.batch,
        "steps": args.steps,
        "warmupSteps": args.warmup,
        "samplesPerSec": args.steps * args.batch / seconds if args.steps else None,
        "stepMs": step_ms,
        "phasesMs": ms,
        "finalLoss": final_loss,
        "compile": compile_info,
        "cudaGraphs": cuda_graphs,
        "optimizer": optimizer_info,
        "cudnnBenchmark": torch.backends.cudnn.benchmark,
        "loaderWorkers": args.workers,
        "threads": torch.get_num_threads(),
        "memoryFormat": "channels_last" if channels_last else "contiguous",
        "device": torch.cuda.get_device_name(device) if on_gpu else "cpu",
        **({"census": census_row} if census_row is not None else {}),
    }))


if __name__ == "__main__":
    main()
