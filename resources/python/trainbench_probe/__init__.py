"""Trainbench's probe inside a user's PyTorch process (standard library + torch, Python 3.9+).

What it measures, from patches that leave the numerics alone:
- step boundaries: every optimizer step() (the outermost call, so a subclass calling super().step() counts once);
- data wait: time blocked in the DataLoader iterator's next(), and the batch size from the batch's tensors;
- forward / loss / backward / optimizer: global module hooks, autograd.backward and step(), timed with
  CUDA events on the current stream when CUDA is in use (read back later, never synchronising a step),
  with the host clock otherwise;
- peak CUDA memory, and an out-of-memory error with the batch it happened at;
- the training loss: the scalar passed to backward(), read in batches (losses.py), never a sync per step.
Everything goes over the Channel, never the script's stdout.
"""
import atexit
import functools
import json
import os
import sys
import threading
import time

from . import overrides as _overrides
from .batches import batch_size_of
from .channel import Channel
from .losses import LossReader

PHASES = ("forward", "loss", "backward", "optimizer")
_OOM_WORDS = ("out of memory", "can't allocate memory")

_probe = None


def install():
    """Called by sitecustomize when TB_PROBE_ADDR is set; the torch patches wait for torch's import."""
    global _probe
    if _probe is not None:
        return
    _probe = Probe(os.environ)
    if "torch" in sys.modules:
        _probe.on_torch(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchWatcher(_probe.on_torch))


class _TorchWatcher:
    """A meta-path finder that lets torch import as usual, then patches it (torch is never imported early)."""

    def __init__(self, callback):
        self._callback = callback
        self._busy = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or self._busy:
            return None
        import importlib.util

        self._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return spec
        sys.meta_path.remove(self)
        spec.loader = _PatchingLoader(spec.loader, self._callback)
        return spec

    def invalidate_caches(self):
        pass


class _PatchingLoader:
    def __init__(self, inner, callback):
        self._inner = inner
        self._callback = callback

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        self._callback(module)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _is_oom(err):
    cls = type(err)
    if cls.__name__ == "OutOfMemoryError":
        return True
    return isinstance(err, RuntimeError) and any(w in str(err) for w in _OOM_WORDS)


class Probe:
    def __init__(self, env):
        self.warmup = int(env.get("TB_PROBE_WARMUP", "0"))
        self.limit = int(env.get("TB_PROBE_STEPS", "0"))  # measured steps; 0: run until the script ends
        self.overrides = json.loads(env.get("TB_PROBE_SET", "{}") or "{}")
        self.identity = {
            "rank": int(env.get("RANK", "0") or 0),
            "localRank": int(env.get("LOCAL_RANK", "0") or 0),
            "worldSize": int(env.get("WORLD_SIZE", "1") or 1),
            "python": sys.version.split()[0],
        }
        self.channel = Channel(env["TB_PROBE_ADDR"], env.get("TB_PROBE_TOKEN", ""), self.identity)
        self.torch = None
        self.losses = None
        self.local = threading.local()
        self.t_start = time.perf_counter()
        self.steps = 0
        self.last_end = None
        self.first_fetch = None
        self.last_batch = None
        self.pending_cuda = []  # (step, phase, start event, end event) not yet read back
        self.done = False
        self._new_window()

    # ---- reporting -------------------------------------------------------------------------
    def send(self, message):
        self.channel.send(message)

    def applied(self, key, value, where):
        self.send({"type": "applied", "key": key, "value": value, "where": where})

    def loader(self, settings, where):
        self.send({"type": "loader", "settings": settings, "where": where})

    def override_failed(self, key, value, where, why):
        shown = key if value is None else "%s=%s" % (key, json.dumps(value))
        message = "override %s could not be applied to the DataLoader made at %s: %s" % (shown, where, why)
        self.send({"type": "error", "code": "E_BAD_INPUT", "message": message})
        return _overrides.OverrideError(message)

    # ---- torch patches -----------------------------------------------------------------------
    def on_torch(self, torch):
        self.torch = torch
        self.identity["torch"] = torch.__version__
        try:
            _overrides.check(self.overrides)
            _overrides.apply_flags(torch, self.overrides)
        except _overrides.OverrideError as err:
            self.send({"type": "error", "code": "E_BAD_INPUT", "message": str(err)})
            raise
        from torch.utils.data import dataloader

        self.losses = LossReader(torch, self.send)

        _overrides.patch_dataloader_init(dataloader.DataLoader, self.overrides, self)
        self._patch_loader_next(dataloader._BaseDataLoaderIter)
        self._patch_optimizer(torch.optim.Optimizer)
        self._patch_backward(torch.autograd)
        self._hook_modules(torch.nn.modules.module)
        previous = sys.excepthook
        sys.excepthook = lambda kind, err, tb: (self._uncaught(err), previous(kind, err, tb))
        atexit.register(self.finish, "exit")

    def _patch_loader_next(self, Iter):
        original = Iter.__next__
        probe = self

        @functools.wraps(original)
        def __next__(self):
            t0 = time.perf_counter()
            if probe.first_fetch is None:
                probe.first_fetch = t0
            try:
                batch = original(self)
            finally:
                probe.window["dataMs"] += (time.perf_counter() - t0) * 1000
            n = batch_size_of(batch)
            probe.window["batches"] += 1
            if n is not None:
                probe.window["samples"] += n
                probe.last_batch = n
            return batch

        Iter.__next__ = __next__

    def _patch_optimizer(self, Optimizer):
        original_init = Optimizer.__init__
        probe = self

        @functools.wraps(original_init)
        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            cls = type(self)
            if not getattr(cls.step, "_trainbench_step", False):
                cls.step = probe._wrap_step(cls.step)

        Optimizer.__init__ = __init__

    def _wrap_step(self, original):
        probe = self

        @functools.wraps(original)  # copies torch's own markers (its profiler's 'hooked'), so torch wraps it once
        def step(self, *args, **kwargs):
            if getattr(probe.local, "in_step", False):
                return original(self, *args, **kwargs)
            probe.local.in_step = True
            mark = probe._mark()
            try:
                out = original(self, *args, **kwargs)
            finally:
                probe.local.in_step = False
            probe._phase_done("optimizer", mark)
            probe._step_done()
            return out

        step._trainbench_step = True
        return step

    def _patch_backward(self, autograd):
        original = autograd.backward
        probe = self

        @functools.wraps(original)
        def backward(*args, **kwargs):
            probe.local.depth = 0  # a forward that raised never closed its phase
            if args or "tensors" in kwargs:
                probe.losses.keep(probe.steps + 1, args[0] if args else kwargs["tensors"])
            mark = probe._mark()
            try:
                return original(*args, **kwargs)
            finally:
                probe._phase_done("backward", mark)

        autograd.backward = backward

    def _hook_modules(self, module_mod):
        if not hasattr(module_mod, "register_module_forward_pre_hook"):
            return  # torch < 1.9: forward and loss stay in 'other'
        loss_base = getattr(self.torch.nn.modules.loss, "_Loss", ())
        probe = self

        def pre(module, inputs):
            depth = getattr(probe.local, "depth", 0)
            if depth == 0:
                probe.local.forward = ("loss" if isinstance(module, loss_base) else "forward", probe._mark())
            probe.local.depth = depth + 1

        def post(module, inputs, output):
            depth = getattr(probe.local, "depth", 1) - 1
            probe.local.depth = max(0, depth)
            if depth == 0 and getattr(probe.local, "forward", None):
                phase, mark = probe.local.forward
                probe.local.forward = None
                probe._phase_done(phase, mark)

        module_mod.register_module_forward_pre_hook(pre)
        module_mod.register_module_forward_hook(post)

    # ---- timing --------------------------------------------------------------------------------
    def _cuda_active(self):
        cuda = self.torch.cuda
        return cuda.is_available() and cuda.is_initialized()

    def _mark(self):
        """The start of a phase: a host time, and a CUDA event on the current stream when CUDA is in use."""
        event = None
        if self.torch is not None and self._cuda_active():
            event = self.torch.cuda.Event(enable_timing=True)
            event.record()
        return (time.perf_counter(), event)

    def _phase_done(self, phase, mark):
        t0, start = mark
        if start is not None:
            end = self.torch.cuda.Event(enable_timing=True)
            end.record()
            self.pending_cuda.append((self.steps + 1, phase, start, end))
            self.window["timing"] = "cuda-events"
        else:
            self.window["phasesMs"][phase] += (time.perf_counter() - t0) * 1000

    def _read_cuda(self, wait):
        """Phase times of finished CUDA work, sent as they become readable (waiting only at the end)."""
        ready = {}
        keep = []
        for step, phase, start, end in self.pending_cuda:
            if wait:
                end.synchronize()
            if end.query():
                ready.setdefault(step, dict.fromkeys(PHASES, 0.0))[phase] += start.elapsed_time(end)
            else:
                keep.append((step, phase, start, end))
        self.pending_cuda = keep
        for step, phases in sorted(ready.items()):
            self.send({"type": "phases", "step": step, "phasesMs": phases, "timing": "cuda-events"})

    def _new_window(self):
        self.window = {"dataMs": 0.0, "samples": 0, "batches": 0, "phasesMs": dict.fromkeys(PHASES, 0.0), "timing": "host-clock"}

    def _step_done(self):
        now = time.perf_counter()
        start = self.last_end or self.first_fetch or self.t_start
        self.steps += 1
        self.last_end = now
        w = self.window
        self._new_window()
        self.send(
            {
                "type": "step",
                "step": self.steps,
                "durMs": (now - start) * 1000,
                "samples": w["samples"],
                "batches": w["batches"],
                "dataMs": w["dataMs"],
                "phasesMs": w["phasesMs"],
                "timing": w["timing"],
            }
        )
        if self.pending_cuda:
            self._read_cuda(wait=False)
        self.losses.step_done(now)
        if self.steps == self.warmup + 1:
            self._check_flags("at the first measured step")
        if self.limit and self.steps >= self.warmup + self.limit:
            self.finish("steps")
            # SystemExit unwinds the script as a normal exit would: finally blocks, DataLoader workers shut down.
            raise SystemExit(0)

    def _check_flags(self, when):
        now = _overrides.read_flags(self.torch, self.overrides)
        for key, value in now.items():
            if value != self.overrides[key]:
                message = "override %s=%s was undone %s: the script sets it itself (now %s)" % (key, json.dumps(self.overrides[key]), when, json.dumps(value))
                self.send({"type": "error", "code": "E_BAD_INPUT", "message": message})
            elif when == "at the first measured step":
                self.applied(key, value, "torch")

    def _uncaught(self, err):
        if _is_oom(err):
            batch = self.last_batch if self.last_batch is not None else self.overrides.get("dataloader.batch_size")
            self.send({"type": "oom", "batchSize": batch, "step": self.steps, "message": str(err)[:2000]})

    def finish(self, reason):
        """Sends the totals once: at the step limit, or when the script ends on its own."""
        if self.done or self.torch is None:
            return
        self.done = True
        memory = {"cudaPeakBytes": None, "cudaTotalBytes": None, "device": "cpu"}
        try:
            if self._cuda_active():
                cuda = self.torch.cuda
                index = cuda.current_device()
                memory = {
                    "cudaPeakBytes": int(cuda.max_memory_allocated(index)),
                    "cudaTotalBytes": int(cuda.get_device_properties(index).total_memory),
                    "device": "cuda:%d" % index,
                }
                self._read_cuda(wait=True)
        except Exception as err:  # reading memory must not turn a good run into a failure
            memory["problem"] = repr(err)
        try:
            self.losses.finish()
        except Exception as err:  # nor may reading the last losses
            self.send({"type": "lossOff", "reason": repr(err)[:500]})
        if self.steps > 0:
            self._check_flags("before the end")
        try:
            import resource

            memory["hostPeakRssBytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except Exception:
            pass
        if self.steps > 0 or reason == "steps":
            self.send({"type": "done", "reason": reason, "steps": self.steps, "memory": memory})
        self.channel.close()
