"""Collectives of a job of several ranks (issue 40): when this rank arrived at DDP's gradient all-reduces and when
they completed here.

Step times cannot name a straggler (DDP's all-reduce makes every rank's step as long as the slowest's); each rank's
arrival time at the collectives can. Two ways, the first the default:

- per step (`watch_ddp`): DDP's reducer already stamps, in C++, when the backward's last gradient bucket was ready (the
  rank's arrival at the all-reduce that ends its step) and when the last all-reduce completed; asked to do it at every
  iteration and read at the step's end. A read costs ~0.2-0.3 ms on a 2-core CPU (1% of a 33 ms step, 4.6% of a 5 ms
  one), so short steps are read one in 2, 4 or 8 (`stamp_poller`). One collective a step, spanning every bucket.
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


MAX_ITEMS_PER_STEP = 4096  # what Trainbench takes in one step's message


class Collectives:
    """The collectives recorded since the last step closed; `take` hands them over at each step's end."""

    def __init__(self):
        self._lock = threading.Lock()  # DDP's reducer may complete futures on its own threads
        self._items = []
        self.pollers = []  # called at each step's end, before the items are handed over (watch_ddp's reading)
        self.step_bytes = 0  # the bytes the latest step's collectives moved: what the floor all-reduces
        self._calls = 0  # explicit torch.distributed calls in this step so far

    def record(self, index, op, arrive_ms, done_ms, nbytes, count=1, explicit=False):
        item = {"index": int(index), "op": op, "arriveMs": arrive_ms, "doneMs": done_ms, "bytes": int(nbytes)}
        if count != 1:
            item["count"] = int(count)
        if explicit:
            item["explicit"] = True
        with self._lock:
            # Bounded between steps (an evaluation loop of all-reduces runs long without one), and to what one
            # message may carry: the rest of a step's collectives are not recorded.
            if len(self._items) < MAX_ITEMS_PER_STEP:
                self._items.append(item)

    def next_call(self):
        """The index of the step's next explicit torch.distributed call: after DDP's buckets, in call order (the same
        on every rank, as collectives must be)."""
        with self._lock:
            index = EXPLICIT_INDEX + self._calls
            self._calls += 1
            return index

    def take(self):
        for poll in self.pollers:
            poll()
        with self._lock:
            items, self._items = self._items, []
            self._calls = 0
        # The latest step's gradient all-reduces, each bucket once (DDP rebuilds its buckets after the first step).
        # Without DDP, the script's own all-reduces (a hand-written gradient average).
        per_bucket = {item["index"]: item["bytes"] for item in items if not item.get("explicit")}
        per_bucket = per_bucket or {item["index"]: item["bytes"] for item in items if item["op"] == "allreduce"}
        if per_bucket:
            self.step_bytes = sum(per_bucket.values())
        return items


# Set while a DDP comm hook runs in this thread: its torch.distributed calls are DDP's bucket, timed as such (or by
# the reducer's stamps), not the script's own calls.
_in_hook = threading.local()


def _in_comm_hook(hook, state, bucket):
    _in_hook.depth = getattr(_in_hook, "depth", 0) + 1
    try:
        return hook(state, bucket)
    finally:
        _in_hook.depth -= 1


def _marked(hook):
    """A DDP comm hook whose torch.distributed calls are known to be the hook's (see wrap_distributed)."""

    @functools.wraps(hook)
    def marked(state, bucket):
        return _in_comm_hook(hook, state, bucket)

    return marked


def _timed(hook, collectives):
    """A DDP comm hook that times `hook`: arrival when DDP hands it the bucket, completion when its future resolves."""

    @functools.wraps(hook)
    def timed(state, bucket):
        arrive = now_ms()
        buffer = bucket.buffer()
        nbytes = buffer.numel() * buffer.element_size()
        index = bucket.index()
        future = _in_comm_hook(hook, state, bucket)

        def done(f):
            collectives.record(index, "allreduce", arrive, now_ms(), nbytes)
            return f.value()

        return future.then(done)

    return timed


EXPLICIT_INDEX = 1000  # explicit calls are numbered from here in each step, apart from DDP's buckets (0, 1, ...)

# The torch.distributed calls timed when a script makes them itself (a hand-written gradient average, a metric
# all-reduce), with the place and keyword of the tensor whose bytes they move (None: no tensor).
_CALLS = {
    "all_reduce": ("allreduce", 0, "tensor"),
    "broadcast": ("broadcast", 0, "tensor"),
    "reduce": ("reduce", 0, "tensor"),
    "all_gather": ("allgather", 1, "tensor"),
    "all_gather_into_tensor": ("allgather", 1, "input_tensor"),
    "reduce_scatter": ("reducescatter", 1, "input_list"),
    "reduce_scatter_tensor": ("reducescatter", 1, "input"),
    "all_to_all_single": ("alltoall", 1, "input"),
    "barrier": ("barrier", None, None),
}


def _nbytes(value):
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    try:
        return int(value.numel()) * int(value.element_size())
    except Exception:
        return 0


def _on_cuda(value):
    if isinstance(value, (list, tuple)):
        return any(_on_cuda(v) for v in value)
    return bool(getattr(value, "is_cuda", False))


def wrap_distributed(torch, collectives, note):
    """Times the script's own torch.distributed calls (issue 40), each one: arrival when called, completion when it
    returns (or, with async_op, when its future completes). Tensors on the host only: a call on CUDA tensors returns
    once queued, so its host times would say nothing of the wait; said once, and left untimed."""
    try:
        dist = torch.distributed
        if not dist.is_available():
            return False
    except Exception as e:
        note("torch.distributed calls are not timed: %s" % e)
        return False
    said = set()

    def timed(name, op, place, keyword):
        original = getattr(dist, name)

        @functools.wraps(original)
        def call(*args, **kwargs):
            if getattr(_in_hook, "depth", 0):  # a DDP comm hook's all-reduce: its bucket, not a call of the script
                return original(*args, **kwargs)
            tensor = args[place] if place is not None and len(args) > place else kwargs.get(keyword) if keyword else None
            if tensor is not None and _on_cuda(tensor):
                if "cuda" not in said:
                    said.add("cuda")
                    note("torch.distributed calls on CUDA tensors are not timed: they return once queued on the GPU")
                return original(*args, **kwargs)
            index = collectives.next_call()
            arrive = now_ms()
            result = original(*args, **kwargs)
            nbytes = _nbytes(tensor) if tensor is not None else 0
            if kwargs.get("async_op"):
                try:
                    result.get_future().then(lambda f: collectives.record(index, op, arrive, now_ms(), nbytes, explicit=True))
                except Exception:  # a Work without a future (an older backend): untimed, said once
                    if "async" not in said:
                        said.add("async")
                        note("torch.distributed calls with async_op=True are not timed here: their work has no future")
            else:
                collectives.record(index, op, arrive, now_ms(), nbytes, explicit=True)
            return result

        return call

    wrapped = 0
    for name, (op, place, keyword) in _CALLS.items():
        if callable(getattr(dist, name, None)):
            setattr(dist, name, timed(name, op, place, keyword))
            wrapped += 1
    return wrapped > 0


def _untimed(fn):
    """The torch.distributed function as torch made it: the probe's own all-reduces (the floor) are not the script's."""
    return getattr(fn, "__wrapped__", fn)


def _ddp_class(torch, note):
    """DistributedDataParallel, or None (said once) in a torch without distributed support: nothing to time."""
    try:
        return torch.nn.parallel.DistributedDataParallel
    except Exception as e:
        note("collectives are not timed: %s" % e)
        return None


READ_BUDGET = 0.01  # reading the stamps may cost at most this share of the step, on average
MAX_EVERY = 8  # and reads at least one step in this many, so a short job still has steps to judge
MIN_READS = 16  # steps read in a known measured window: the straggler's share needs ~10 for a 95% interval


def most_every(window):
    """The sparsest reading that still reads MIN_READS steps of a measured window of `window` steps (0: unknown).

    On a busy machine the read outgrows the budget and a rank read 1 step in 8: 20 measured steps left 2 or 3 read by
    every rank, too few to name the straggler planted in them. A short window pays for its reads instead.
    """
    every = MAX_EVERY
    while window and every > 1 and window // every < MIN_READS:
        every //= 2
    return every


def watch_ddp(torch, collectives, note, budget=READ_BUDGET, window=0):
    """Times every DDP model's gradient sync per step from its reducer's own stamps (no hook; torch 1.13 and 2.x).

    `window`: the measured steps, when known, so that enough of them are read (most_every)."""
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

    poll = stamp_poller(lambda: list(models), collectives, say_once, models.discard, budget, most_every(window))
    original_register = DDP.register_comm_hook

    @functools.wraps(original_register)
    def register_comm_hook(self, state, hook):
        return original_register(self, state, _marked(hook))

    DDP.forward = forward
    DDP.register_comm_hook = register_comm_hook
    collectives.pollers.append(poll)
    return True




def stamp_poller(models, collectives, say_once, drop, budget=READ_BUDGET, sparsest=MAX_EVERY):
    """The step-end reading of every DDP model's stamps, on the steps it can afford.

    A read costs ~0.1-0.3 ms on a 2-core CPU (it grows with the model): 1% of a 33 ms step, but 4.6% of a 5 ms one.
    So it reads every `every`-th step, `every` a power of two (at most `sparsest`) that keeps the read's average cost,
    against the time between steps, under `budget`; both are smoothed over the reads. Ranks of a job step in lockstep
    and count steps alike, so powers of two keep them reading the same steps (the multiples of the largest), which is
    what the verdicts compare. `budget` None: every step.
    """
    state = {"n": 0, "every": 1, "cost": None, "period": None, "last": None}

    def smooth(key, x):
        state[key] = x if state[key] is None else 0.7 * state[key] + 0.3 * x

    def poll():
        now = time.perf_counter()
        if state["last"] is not None:
            smooth("period", now - state["last"])
        state["last"] = now
        state["n"] += 1
        if state["n"] % state["every"]:
            return
        for index, model in enumerate(models()):
            try:
                item = _reducer_item(model)
            except Exception as e:
                say_once("this model's all-reduces are not timed: %s" % e)
                drop(model)
                continue
            if item == "clock":
                say_once("this model's all-reduces are not timed: its reducer's stamps are not on the wall clock")
                drop(model)
            elif item is not None:
                collectives.record(index, "allreduce", *item)
        smooth("cost", time.perf_counter() - now)
        if budget and state["period"]:
            every = 1
            while every < sparsest and state["cost"] > budget * state["period"] * every:
                every *= 2
            state["every"] = every

    return poll


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


def clock_offset(exchange, probes=8, most=64, good_ms=0.5, budget_ms=2000.0):
    """The collector's clock minus this one, NTP-style, from the round trip with the least delay.

    `exchange(t0)` sends a clock probe and returns the collector's (t1, t2): its time on receipt and on reply, or None
    when no answer came. Returns (offset_ms, uncertainty_ms, answered) or None; the uncertainty is half the round
    trip less the collector's own time, the most a one-way delay can skew the estimate. After `probes` round trips it
    goes on, a few ms apart, up to `most` or `budget_ms`, while the best is worse than `good_ms`: on a busy machine
    every one of the first few can wait behind other work, and an uncertainty of tens of ms hides a real straggler.
    """
    best = None
    answered = 0
    began = now_ms()
    while answered < most:
        if answered >= probes and (best[1] <= good_ms or now_ms() - began > budget_ms):
            break
        if answered >= probes:
            time.sleep(0.005)  # let a burst of other work pass rather than queue behind it again
        t0 = now_ms()
        reply = exchange(t0)
        t3 = now_ms()
        if reply is None:  # over TCP nothing is lost: a collector that did not answer in time will not; stop waiting
            break
        t1, t2 = reply
        answered += 1
        uncertainty = max(0.0, (t3 - t0) - (t2 - t1)) / 2.0
        if best is None or uncertainty < best[1]:
            best = (((t1 - t0) + (t2 - t3)) / 2.0, uncertainty)
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
    all_reduce = _untimed(dist.all_reduce)
    all_reduce(agreed, op=dist.ReduceOp.MAX)
    buffer = torch.zeros(max(1, int(agreed.item()) // 4), dtype=torch.float32, device=where)
    times = []
    for i in range(2 + FLOOR_TIMED):
        start = time.perf_counter()
        all_reduce(buffer)
        if cuda:
            torch.cuda.synchronize(device)
        if i >= 2:
            times.append(time.perf_counter() - start)
    ms = sorted(times)[len(times) // 2] * 1000.0
    moved = buffer.numel() * 4
    return {"type": "allreduceFloor", "bytes": moved, "ranks": ranks, "ms": ms, "busBytesPerSec": moved * 2.0 * (ranks - 1) / ranks / (ms / 1000.0)}
