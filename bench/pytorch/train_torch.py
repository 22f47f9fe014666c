"""PyTorch's side of the race: the same model, optimiser and cached data as the
engine, fed through a tuned DataLoader, eager or torch.compile'd, AMP bf16 or
fp32. Prints one JSON line: samples/s over the timed steps and the mean
milliseconds per step of each phase (CUDA events, read once at the end, so
timing does not stall the step).

    python3 bench/pytorch/train_torch.py --cache DIR [--test-cache DIR] --spec JSON \
        --batch 750 --steps 200 --warmup 30 --mode eager|compile --precision bf16|fp32 \
        [--device cpu --threads N --workers 0|1 --memory-format channels_last|contiguous]
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("--spec", required=True, help="the engine's model spec (JSON), defaults filled")
    ap.add_argument("--batch", type=int, default=750)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
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
    spec = json.loads(args.spec)
    input_shape = spec.get("input") or [104, 9, 9]
    fields = ["x", "policy", "value"] if spec["family"] == "bottleneck_resnet" else ["x", "y"]
    data = CachedDataset(args.cache, fields)
    x_stats = data.stats.get("x") or {}
    scale = 1.0 / x_stats["std"] if x_stats.get("std") else 1.0
    offset = -x_stats["mean"] * scale if x_stats.get("std") else 0.0  # the engine's normalisation of x

    sampler = BatchSampler(RandomSampler(data, replacement=False), args.batch, drop_last=True)
    on_gpu = args.device == "cuda"
    # PyTorch 1.x refuses prefetch_factor (even None) without worker processes: pass it only with them.
    worker_options = {"persistent_workers": True, "prefetch_factor": 4} if args.workers > 0 else {}
    loader = DataLoader(data, sampler=sampler, batch_size=None, num_workers=args.workers, pin_memory=on_gpu, **worker_options)

    device = torch.device(args.device)
    channels_last = args.memory_format == "channels_last" and spec["family"] != "mlp"
    model = models.build(spec).to(device).to(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    step_fn_model = torch.compile(model) if args.mode == "compile" else model
    amp = torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.precision == "bf16")

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
            torch.cuda.synchronize()

    phases = ["data", "h2d", "forward", "loss", "backward", "optimizer"]
    events, data_wait = [], 0.0
    total = args.warmup + args.steps
    done, t_start = 0, None
    it = iter(loader)
    while done < total:
        if done == args.warmup:
            sync()
            t_start, events, data_wait = time.perf_counter(), [], 0.0
        t0 = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            it = iter(loader)
            batch = next(it)
        data_wait += time.perf_counter() - t0
        ev = [mark()]
        gpu = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        # The model's input shape, as the engine reads it: a cache may store x flatter (Fashion-MNIST's 28x28 for a 1x28x28 CNN).
        x = gpu["x"].float().reshape((-1, *input_shape)).mul_(scale).add_(offset)
        if x.dim() == 4 and channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        ev.append(mark())
        with amp:
            out = step_fn_model(x)
            ev.append(mark())
            loss = models.loss_fn(spec, out, gpu)
        ev.append(mark())
        loss.backward()
        ev.append(mark())
        opt.step()
        opt.zero_grad(set_to_none=True)
        ev.append(mark())
        events.append(ev)
        done += 1
    sync()
    seconds = time.perf_counter() - t_start
    ms = {p: 0.0 for p in phases}
    for ev in events:
        for i, p in enumerate(phases[1:]):
            ms[p] += elapsed_ms(ev[i], ev[i + 1])
    ms = {p: v / len(events) for p, v in ms.items()}
    ms["data"] = 1000.0 * data_wait / len(events)
    print(json.dumps({
        "framework": f"pytorch {torch.__version__}",
        "mode": args.mode,
        "precision": args.precision,
        "batch": args.batch,
        "steps": args.steps,
        "warmupSteps": args.warmup,
        "samplesPerSec": args.steps * args.batch / seconds,
        "stepMs": 1000.0 * seconds / args.steps,
        "phasesMs": ms,
        "finalLoss": float(loss.detach()),
        "loaderWorkers": args.workers,
        "threads": torch.get_num_threads(),
        "memoryFormat": "channels_last" if channels_last else "contiguous",
        "device": torch.cuda.get_device_name(0) if on_gpu else "cpu",
    }))


if __name__ == "__main__":
    main()
