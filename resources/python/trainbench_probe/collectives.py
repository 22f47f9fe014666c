"""Collectives of a job of several ranks (issue 40): when this rank called each all-reduce and when it completed here.

Step times cannot name a straggler (DDP's all-reduce makes every rank's step as long as the slowest's); each rank's
arrival time at each collective can. DDP's gradient buckets are timed through its communication hook: the script's
own hook, if it registers one, is wrapped (it runs as it would); otherwise the default all-reduce is registered at
the model's first forward, after the script had its chance to register its own. Times are this machine's wall clock
in ms (time.time), made comparable across machines by the clock offset the probe estimates against the collector.
"""
import functools
import threading
import time


def now_ms():
    return time.time() * 1000.0


class Collectives:
    """The collectives recorded since the last step closed; `take` hands them over at each step's end."""

    def __init__(self):
        self._lock = threading.Lock()  # DDP's reducer may complete futures on its own threads
        self._items = []

    def record(self, index, op, arrive_ms, done_ms, nbytes):
        with self._lock:
            self._items.append({"index": int(index), "op": op, "arriveMs": arrive_ms, "doneMs": done_ms, "bytes": int(nbytes)})

    def take(self):
        with self._lock:
            items, self._items = self._items, []
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


def patch_ddp(torch, collectives, note):
    """Times every DDP model's gradient all-reduces; a script's own comm hook keeps running, timed."""
    major = str(getattr(torch, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 2:
        # Seen on torch 1.13: a rank hung for good in one job of four, its completion callback waiting for the GIL.
        note("collectives are not timed: that needs torch 2.0 or later (this is %s)" % getattr(torch, "__version__", "?"))
        return False
    try:
        DDP = torch.nn.parallel.DistributedDataParallel
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    except Exception as e:  # a torch without distributed support: nothing to time
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
