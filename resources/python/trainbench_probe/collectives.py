"""Collectives of a job of several ranks (issue 40): when this rank arrived at DDP's gradient all-reduces and when
they completed here.

Step times cannot name a straggler (DDP's all-reduce makes every rank's step as long as the slowest's); each rank's
arrival time at the collectives can. Two ways, the first the default:

- per step (`watch_ddp`): DDP's reducer already stamps, in C++, when the backward's last gradient bucket was ready (the
  rank's arrival at the all-reduce that ends its step) and when the last all-reduce completed; asked to do it at every
  iteration and read once at the step's end, it costs ~0.2-0.3 ms a step on a 2-core CPU (the reading: 1% of a 33 ms
  step, 4.6% of a 5 ms one). One collective a step, spanning every bucket.
- per bucket (`patch_ddp`): DDP's communication hook, wrapped. The script's own hook, if it registers one, keeps
  running timed; otherwise the default all-reduce is registered at the model's first forward. A Python hook and its
  completion callback cost a bucket ~0.1 ms on a small CPU step (bench/script/collectives_overhead.py).

Times are this machine's wall clock in ms (time.time), made comparable across machines by the clock offset the probe
estimates against the collector.
"""
import functools
import re
import threading
import time
import weakref


def now_ms():
    return time.time() * 1000.0


class Collectives:
    """The collectives recorded since the last step closed; `take` hands them over at each step's end."""

    def __init__(self):
        self._lock = threading.Lock()  # DDP's reducer may complete futures on its own threads
        self._items = []
        self.pollers = []  # called at each step's end, before the items are handed over (watch_ddp's reading)
        self.step_bytes = 0  # the bytes the latest step's collectives moved: what the floor all-reduces

    def record(self, index, op, arrive_ms, done_ms, nbytes, count=1):
        item = {"index": int(index), "op": op, "arriveMs": arrive_ms, "doneMs": done_ms, "bytes": int(nbytes)}
        if count != 1:
            item["count"] = int(count)
        with self._lock:
            self._items.append(item)

    def take(self):
        for poll in self.pollers:
            poll()
        with self._lock:
            items, self._items = self._items, []
        # The latest step's, each bucket once (DDP rebuilds its buckets after the first step).
        per_bucket = {item["index"]: item["bytes"] for item in items}
        if per_bucket:
            self.step_bytes = sum(per_bucket.values())
        return items


def _timed(hook, collectives):
    """A DDP comm hook that times `hook`: arrival when DDP hands it the bucket, completion when its future resolves."""

    @functools.wraps(hook)
    def timed(state, bucket):
        arrive = now_ms()
        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        index = bucket.index()
        future = hook(state, bucket)

        def done(f):
            collectives.record(index, "allreduce", arrive, now_ms(), nbytes)
            return f.value()

        return future.then(done)

    return timed


def _ddp_class(torch, note):
    """DistributedDataParallel, or None (said once) in a torch without distributed support: nothing to time."""
    try:
        return torch.nn.parallel.DistributedDataParallel
    except Exception as e:
        note("collectives are not timed: %s" % e)
        return None


def watch_ddp(torch, collectives, note):
    """Times every DDP model's gradient sync per step from its reducer's own stamps (no hook; torch 1.13 and 2.x)."""
    DDP = _ddp_class(torch, note)
    if DDP is None:
        return False
    original_forward = DDP.forward
    models = weakref.WeakSet()
    said = set()

    def say_once(what):
        if what not in said:
            said.add(what)
            note(what)

    @functools.wraps(original_forward)
    def forward(self, *args, **kwargs):
        if self not in models:
            try:
                # The reducer stamps its timers at sampled iterations only (1 in 100 by default): every one, here.
                self._set_ddp_runtime_logging_sample_rate(1)
                models.add(self)
            except Exception as e:  # a DDP without the reducer's timers (a compiled DDP, another torch): untimed, said once
                say_once("this model's all-reduces are not timed: %s" % e)
        return original_forward(self, *args, **kwargs)

    def poll():
        for index, model in enumerate(list(models)):
            try:
                item = _reducer_item(model)
            except Exception as e:
                say_once("this model's all-reduces are not timed: %s" % e)
                models.discard(model)
                continue
            if item == "clock":
                say_once("this model's all-reduces are not timed: its reducer's stamps are not on the wall clock")
                models.discard(model)
            elif item is not None:
                collectives.record(index, "allreduce", *item)

    DDP.forward = forward
    collectives.pollers.append(poll)
    return True


def _reducer_item(model):
    """The model's last synced iteration as (arrival, completion, bytes, buckets), None if read before, or "clock"."""
    # DDP logs an iteration's stamps at the next forward; asked now, the iteration just ended is read at its own step.
    model.logger.set_runtime_stats_and_log()
    data = model._get_ddp_logging_data()
    iteration = data.get("iteration")
    start, ready, done = (data.get(k) for k in ("forward_compute_time_start", "backward_compute_time_end", "backward_comm_time_end"))
    if None in (iteration, start, ready, done) or iteration == getattr(model, "_trainbench_iteration", None):
        return None  # no backward yet, or no sync since (no_sync accumulation): nothing new
    model._trainbench_iteration = iteration
    if abs(start / 1e6 - now_ms()) > 3600e3:
        return "clock"
    if done < ready or ready < start:
        return None  # the sync of an earlier iteration (this one computed under no_sync)
    sizes = [int(x) for x in re.findall(r"\d+", str(data.get("rebuilt_bucket_sizes") or data.get("bucket_sizes") or ""))]
    nbytes = sum(sizes) if sizes else int(data.get("total_parameter_size_bytes") or 0)
    return ready / 1e6, done / 1e6, nbytes, max(1, len(sizes))


def patch_ddp(torch, collectives, note):
    """Times every DDP model's gradient all-reduces, bucket by bucket; a script's own comm hook keeps running, timed."""
    major = str(getattr(torch, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 2:
        # Seen on torch 1.13: a rank hung for good in one job of four, its completion callback waiting for the GIL.
        note("collectives are not timed bucket by bucket: that needs torch 2.0 or later (this is %s)" % getattr(torch, "__version__", "?"))
        return False
    DDP = _ddp_class(torch, note)
    if DDP is None:
        return False
    try:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    except Exception as e:  # DDP's class exists in a torch built without distributed support; its hooks do not
        note("collectives are not timed: %s" % e)
        return False
    original_register = DDP.register_comm_hook
    original_forward = DDP.forward

    @functools.wraps(original_register)
    def register_comm_hook(self, state, hook):
        self._trainbench_hooked = True
        return original_register(self, state, _timed(hook, collectives))

    @functools.wraps(original_forward)
    def forward(self, *args, **kwargs):
        if not getattr(self, "_trainbench_hooked", False):
            self._trainbench_hooked = True
            try:
                # The default hook's state is the process group (None: the default one), as DDP's own reducer uses.
                original_register(self, getattr(self, "process_group", None), _timed(default_hooks.allreduce_hook, collectives))
            except Exception as e:  # a DDP that takes no hook now (static graph rebuilt, an old torch): untimed, said once
                note("this model's all-reduces are not timed: %s" % e)
        return original_forward(self, *args, **kwargs)

    DDP.register_comm_hook = register_comm_hook
    DDP.forward = forward
    return True


def clock_offset(exchange, probes=8):
    """The collector's clock minus this one, NTP-style, from the round trip with the least delay among `probes`.

    `exchange(t0)` sends a clock probe and returns the collector's (t1, t2): its time on receipt and on reply, or None
    when no answer came. Returns (offset_ms, uncertainty_ms, answered) or None; the uncertainty is half the round
    trip less the collector's own time, the most a one-way delay can skew the estimate.
    """
    best = None
    answered = 0
    for _ in range(probes):
        t0 = now_ms()
        reply = exchange(t0)
        t3 = now_ms()
        if reply is None:  # over TCP nothing is lost: a collector that did not answer in time will not; stop waiting
            break
        t1, t2 = reply
        answered += 1
        delay = (t3 - t0) - (t2 - t1)
        offset = ((t1 - t0) + (t2 - t3)) / 2.0
        if best is None or delay < best[1]:
            best = (offset, max(0.0, delay) / 2.0)
    return None if best is None else (best[0], best[1], answered)


FLOOR_MAX_BYTES = 256 << 20  # a step's gradients can be GBs: the floor's buffer stops here, a rate is a rate
FLOOR_TIMED = 5  # all-reduces timed (after 2 that line the ranks up): the median is the floor


def allreduce_floor(torch, device, nbytes):
    """The all-reduce floor between this job's ranks (issue 40): a buffer of the step's gradient bytes all-reduced on
    the job's own process group, alone, after the measured steps; every rank runs it at the same step (the probe
    stops them all there). Returns the message, or None where there is no process group of several ranks."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()) or nbytes <= 0:
        return None
    ranks = dist.get_world_size()
    if ranks < 2:
        return None
    cuda = device is not None and getattr(device, "type", "cpu") == "cuda"
    where = device if cuda else "cpu"
    # The ranks agree on the size first: an all-reduce of different sizes would hang them.
    agreed = torch.tensor([float(min(int(nbytes), FLOOR_MAX_BYTES))], device=where)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    buffer = torch.zeros(max(1, int(agreed.item()) // 4), dtype=torch.float32, device=where)
    times = []
    for i in range(2 + FLOOR_TIMED):
        start = time.perf_counter()
        dist.all_reduce(buffer)
        if cuda:
            torch.cuda.synchronize(device)
        if i >= 2:
            times.append(time.perf_counter() - start)
    ms = sorted(times)[len(times) // 2] * 1000.0
    moved = buffer.numel() * 4
    return {"type": "allreduceFloor", "bytes": moved, "ranks": ranks, "ms": ms, "busBytesPerSec": moved * 2.0 * (ranks - 1) / ranks / (ms / 1000.0)}
