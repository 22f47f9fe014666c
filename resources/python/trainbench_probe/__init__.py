"""Trainbench's probe inside a user's PyTorch process (standard library + torch, Python 3.9+, torch 1.13 to 2.x).

What it measures, from patches that leave the numerics alone (docs/adr/0013-script-probe.md, 0022):
- training iterations: one per time round the loop, however many optimizer step() calls it makes
  (iterations.py has the rule); a step a GradScaler skipped is a skipped iteration, not merged;
- data wait: time blocked in a DataLoader iterator's next(), and the batch size from the batch,
  counted only for batches training uses (evaluation passes are taken out);
- forward / loss / backward / optimizer: hooks on the modules that hold the optimizers' parameters
  (modules.py), the outermost autograd.backward and step(); CUDA events on the training device's
  current stream when it is a GPU (read back later, never synchronising a step), the host clock otherwise;
- peak CUDA memory of that device, and an out-of-memory error with the batch it happened at;
- the training loss: the scalar given to backward(), unscaled when a GradScaler scaled it, read in
  batches (losses.py), never a sync per step.
Nothing of it runs inside a torch.compile trace: a step taken inside a compiled function is seen after it. Everything goes over the Channel, never the script's stdout.
"""
import atexit
import functools
import itertools
import json
import os
import sys
import threading
import time
import types
import weakref

from . import copies as _copies
from . import ddp as _ddp
from . import model as _model
from . import optimizers as _optimizers
from . import overrides as _overrides
from .batch_copy import batch_layout, time_batch_copy
from .batches import batch_size_of
from .channel import Channel
from .collectives import Collectives, allreduce_floor, clock_offset, patch_ddp, watch_ddp, wrap_distributed
from .iterations import PHASES, Iterations
from .losses import LossReader
from .flops import FlopCounter, matmul_peak
from .modules import ModuleHooks, compiling_check

_OOM_WORDS = ("out of memory", "can't allocate memory")
_SKIP = "skip"  # a mark taken during CUDA-graph capture: nothing to time

_probe = None


def install():
    """Called by sitecustomize when TB_PROBE_ADDR is set; the torch patches wait for torch's import."""
    global _probe
    if _probe is not None:
        return
    _probe = Probe(os.environ)
    if "torch" in sys.modules:
        _probe.on_torch_guarded(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchWatcher(_probe.on_torch_guarded))


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


def _note(message):
    sys.stderr.write("trainbench probe: %s\n" % message)


class _State:
    """The probe's state in one thread. A plain object, one per thread (_Threads): its attributes are read and set
    several times a step, and a threading.local's cost 3 to 4 times as much, more from a cold cache (issue 38), so a
    wrapper reads the thread's _State once. step_mark and scaler_stepped are unset until a step sets them."""

    __slots__ = ("in_fetch", "depth", "call", "opt_depth", "in_scaler", "closure_repeat", "checkpoint_forward", "step_mark", "scaler_stepped")

    def __init__(self):
        self.in_fetch = False  # inside a DataLoader's next()
        self.depth = 0  # module calls open (the outermost is the training forward)
        self.call = None  # (phase, mark) of the outermost module call
        self.opt_depth = 0  # inside an optimizer's step()
        self.in_scaler = False  # inside a GradScaler's step()
        self.closure_repeat = False  # inside a step(closure)'s second or later call of the closure
        self.checkpoint_forward = 0  # inside a reentrant checkpoint's forward (flops.py)


class _Threads(threading.local):
    def __init__(self):
        self.state = _State()  # run again in each thread that reads it: a fresh state there


class Probe:
    def __init__(self, env):
        self.warmup = int(env.get("TB_PROBE_WARMUP", "0"))
        self.limit = int(env.get("TB_PROBE_STEPS", "0"))  # measured steps; 0: run until the script ends
        self.stop_at = self.warmup + self.limit if self.limit else float("inf")  # the step that ends a bounded trial
        self.measure_peak = env.get("TB_PROBE_PEAK") == "1"  # a benchmark's utilisation and floors want torch's matmul and copy rates
        # Asked for (issue 40): "step" reads DDP's own stamps once a step (~0.2-0.3 ms); "bucket" wraps its comm hook, which
        # costs a small step up to a sixth of its time.
        self.time_collectives = {"1": "step", "step": "step", "bucket": "bucket"}.get(env.get("TB_PROBE_COLLECTIVES", ""))
        self.overrides = json.loads(env.get("TB_PROBE_SET", "{}") or "{}")
        seed = env.get("TB_PROBE_SEED", "")
        self.seed = int(seed) if seed.strip() else None  # the wizard's: the same in every launch it compares
        # The wizard's loss guard of a change of the random streams: stream i moves every seed the launch sets by i.
        self.seed_stream = int(env.get("TB_PROBE_SEED_STREAM", "0") or 0)
        self.script_seed = None  # the script's own first torch.manual_seed, as reported
        self.held = []  # what the script did before its first step, said at that step (see said_at_first_step)
        self.identity = {
            "rank": int(env.get("RANK", "0") or 0),
            "localRank": int(env.get("LOCAL_RANK", "0") or 0),
            "worldSize": int(env.get("WORLD_SIZE", "1") or 1),
            "python": sys.version.split()[0],
        }
        if self.identity["worldSize"] > 1:  # a job that may span machines: which one this rank is on
            import socket

            self.identity["node"] = socket.gethostname()[:255]
            self.identity["nodeRank"] = int(env.get("GROUP_RANK", env.get("NODE_RANK", "0")) or 0)
        self.channel = Channel(env["TB_PROBE_ADDR"], env.get("TB_PROBE_TOKEN", ""), self.identity)
        self.torch = None
        self.losses = None
        self.modules = None
        self.flops = None
        self.model = None
        self.copies = None
        self.threads = _Threads()  # .state: this thread's _State
        self.t_start = time.perf_counter()
        self.iterations = Iterations(self._iteration_closed, self.t_start)
        self.steps = 0  # iterations closed
        self.last_batch = None
        self.batch_layout = None  # the first training batch's host tensors (shape, dtype), for the copy floor
        self.pending_cuda = []  # (step, phase, start event, end event) not yet read back
        self.device = None  # the CUDA device training runs on (from the optimizer's parameters)
        self.backward_depth = 0  # process-wide: CUDA backward runs on autograd's own threads
        self.deferred_steps = []  # steps taken inside a backward (optimizer-in-backward): they end with it
        self.scaled = {}  # id(scaled loss) -> (weakref to it, the loss before GradScaler.scale)
        self.keys = itertools.count(1)
        self.stop_due = False
        self.stopping = False
        self.backward_seen = False
        self.dynamo_kept_out = False
        self.optimizers = []  # (weakref, [first parameter], key): for steps inside compiled functions
        self.in_compiled = 0  # inside a compiled function's run (_counting): an eager step there is noted by version
        self.collectives = None  # a job of several ranks: its DDP all-reduces, timed (collectives.py)
        self.done = False
        self._compiling = lambda: False

    # ---- reporting -------------------------------------------------------------------------
    def send(self, message, at_once=None):
        """A per-step message (step, phases, loss) may be held briefly (channel.py); any other goes at once."""
        self.channel.send(message, at_once)

    def said_at_first_step(self, message):
        """Sends a message once the process has trained a step (at once after): a process that imports torch and never
        trains (a launcher, a spawned worker, a helper) opens no connection and is never taken for a rank."""
        if self.steps > 0:
            self.send(message)
        else:
            self.held.append(message)

    def applied(self, key, value, where):
        self.send({"type": "applied", "key": key, "value": value, "where": where})

    def loader(self, settings, where):
        self.send({"type": "loader", "settings": settings, "where": where})

    def optimizer(self, info, where):
        self.send(dict(info, type="optimizer", where=where))

    def override_failed(self, key, value, where, why, made="the DataLoader"):
        shown = key if value is None else "%s=%s" % (key, json.dumps(value))
        at = " made at %s" % where if where else ""
        message = "override %s could not be applied to %s%s: %s" % (shown, made, at, why)
        self.send({"type": "error", "code": "E_BAD_INPUT", "message": message})
        return _overrides.OverrideError(message)

    # ---- torch patches -----------------------------------------------------------------------
    def on_torch_guarded(self, torch):
        """Runs inside the script's `import torch`: nothing but a refused override may escape into it."""
        try:
            self.on_torch(torch)
        except _overrides.OverrideError:
            raise
        except Exception as err:
            _note("not started (%r); the script runs unmeasured" % (err,))

    def on_torch(self, torch):
        self.torch = torch
        self.identity["torch"] = getattr(torch, "__version__", "?")
        try:
            _overrides.check(self.overrides)
            _overrides.apply_flags(torch, self.overrides)
        except _overrides.OverrideError as err:
            self.send({"type": "error", "code": "E_BAD_INPUT", "message": str(err)})
            raise
        self._compiling = compiling_check(torch)
        self._seed(torch)
        self.losses = LossReader(torch, self.send)
        self.model = _model.ModelKnobs(torch, self, self.overrides)
        self.copies = self._patch_copies(torch)
        self.flops = FlopCounter(torch, self)
        self.modules = ModuleHooks(torch, self)
        from torch.utils.data import dataloader

        parts = (
            ("DataLoader.__init__", lambda: _overrides.patch_dataloader_init(dataloader.DataLoader, self.overrides, self)),
            ("DataLoader iterators", lambda: self._patch_loader_next(dataloader._BaseDataLoaderIter)),
            ("Optimizer", lambda: self._patch_optimizer(torch.optim.Optimizer)),
            ("optimizer implementations", lambda: _optimizers.patch_optimizer_inits(torch.optim.Optimizer, _every_subclass, self.overrides, self, self.identity["torch"])),
            ("zero_grad", lambda: _optimizers.patch_zero_grad(torch, self.overrides, self)),
            ("autograd.backward", lambda: self._patch_backward(torch.autograd)),
            ("GradScaler", lambda: self._patch_grad_scalers(torch)),
            ("torch.compile", lambda: self._patch_compile(torch)),
            ("DistributedDataParallel.__init__", lambda: _ddp.patch_ddp_init(torch, self.overrides, self)),
        )
        if self.model.amp_name == "fp16":
            parts += (("gradient clipping", lambda: _model.patch_clipping(torch, self.model)),)
        if self.identity["worldSize"] > 1 and self.time_collectives:
            parts += (("DDP's all-reduces", lambda: self._time_collectives(torch)),)
        for name, patch in parts:
            try:
                patch()
            except _overrides.OverrideError:
                raise  # an asked override that cannot be applied ends the launch, never runs it without
            except Exception as err:  # a renamed private in a future torch: measure without that part
                _note("could not patch %s (%r); measuring without it" % (name, err))
        previous = sys.excepthook
        sys.excepthook = lambda kind, err, tb: (self._uncaught(err), previous(kind, err, tb))
        atexit.register(self.finish, "exit")

    def _time_collectives(self, torch):
        collectives = Collectives()
        if self.time_collectives == "bucket":
            ddp = patch_ddp(torch, collectives, _note)
        else:
            ddp = watch_ddp(torch, collectives, _note, window=self.limit)
        if wrap_distributed(torch, collectives, _note) or ddp:
            self.collectives = collectives

    def _clock(self, at):
        """This node's clock against the collector's (issue 40), so ranks on other machines compare their arrivals."""
        try:
            found = clock_offset(self.channel.exchange)
        except Exception as err:  # measuring the clock must never stop the script
            _note("the clock offset was not measured (%r)" % (err,))
            return
        if found is None:
            _note("the collector did not answer a clock probe: arrivals are compared on this node's clock")
            return
        offset, uncertainty, answered = found
        self.send({"type": "clockOffset", "at": at, "offsetMs": offset, "uncertaintyMs": uncertainty, "probes": answered})

    def _patch_copies(self, torch):
        """copy.non_blocking, patched apart from the measuring parts: a refusal must end the run, not be noted."""
        asked = self.overrides.get("copy.non_blocking")
        if asked is False:
            self.said_at_first_step({"type": "applied", "key": "copy.non_blocking", "value": False, "where": "the script's copies, as written"})
        return _copies.patch_copies(torch, self, self._compiling) if asked is True else None

    def _seed(self, torch):
        """The wizard's seed, set as torch is imported (the script's own seeding, later, wins). Both are said at the
        first step: a process that imports torch and never trains (a launcher, a spawned worker) sends nothing.

        With TB_PROBE_SEED_STREAM=i (i > 0) every seed the launch sets, the wizard's and the script's own (torch,
        random, numpy), is moved by i: the same training on another random stream, so that the wizard can measure the
        loss's spread across streams where the script seeds itself too (docs/adr/0042)."""
        import random

        original = torch.manual_seed
        probe = self
        pid = os.getpid()
        stream = self.seed_stream
        numpy = sys.modules.get("numpy")  # torch imports it where it is installed; never imported for this

        def moved(seed):
            return seed + stream if stream and isinstance(seed, int) else seed

        @functools.wraps(original)
        def manual_seed(seed):
            # DataLoader workers seed themselves in their own (forked) processes: not the script's choice.
            if probe.script_seed is None and os.getpid() == pid:
                probe.script_seed = {"type": "seed", "by": "script", "seed": int(seed) if isinstance(seed, int) else None, "where": _overrides.caller_location()}
                probe.said_at_first_step(probe.script_seed)
            # In a worker process torch seeds itself from its loader's base seed: that stream moves with the main one.
            return original(moved(seed) if os.getpid() == pid else seed)

        if self.seed is not None:
            original(self.seed + stream)
            random.seed(self.seed + stream)
            if numpy is not None:
                numpy.random.seed((self.seed + stream) % (1 << 32))
        torch.manual_seed = manual_seed
        if stream:
            self._move_other_seeds(random, numpy, moved, pid)

    @staticmethod
    def _move_other_seeds(random, numpy, moved, pid):
        """The script's own random.seed and numpy.random.seed, moved to the launch's stream like torch's."""
        seed_random = random.seed

        @functools.wraps(seed_random)
        def random_seed(a=None, *args, **kwargs):
            return seed_random(moved(a) if os.getpid() == pid else a, *args, **kwargs)

        random.seed = random_seed
        if numpy is not None:
            seed_numpy = numpy.random.seed

            @functools.wraps(seed_numpy)
            def numpy_seed(seed=None):
                return seed_numpy(moved(seed) % (1 << 32) if os.getpid() == pid and isinstance(seed, int) else seed)

            numpy.random.seed = numpy_seed

    def quiet(self):
        """True where module calls are not the script's training forward: inside a fetch or a backward."""
        return self.backward_depth > 0 or self.threads.state.in_fetch

    def _patch_loader_next(self, Iter):
        probe = self
        torch = self.torch

        def wrap(cls):
            original = cls.__dict__.get("__next__")
            if original is None or getattr(original, "_trainbench", False):
                return

            @functools.wraps(original)
            def __next__(self):
                local = probe.threads.state
                if local.in_fetch or probe._compiling():
                    return original(self)  # a subclass's next() calling its base's
                if probe.stop_due:
                    probe.stop_if_due()
                local.in_fetch = True
                t0 = time.perf_counter()
                try:
                    batch = original(self)
                finally:
                    local.in_fetch = False
                t1 = time.perf_counter()
                n = batch_size_of(batch)
                if n is not None:
                    probe.last_batch = n
                grad = torch.is_grad_enabled()
                if grad and probe.measure_peak and probe.batch_layout is None:
                    probe.batch_layout = batch_layout(torch, batch)
                probe.iterations.fetched(t0, t1, n, grad)
                return batch

            __next__._trainbench = True
            cls.__next__ = __next__

        _every_subclass(Iter, wrap)

    def _patch_optimizer(self, Optimizer):
        original_init = Optimizer.__init__
        probe = self

        @functools.wraps(original_init)
        def __init__(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            try:
                cls = type(self)
                if not getattr(cls.step, "_trainbench_step", False):
                    cls.step = probe._wrap_step(cls.step)
                self._trainbench_key = next(probe.keys)
                probe._optimizer_made(self)
            except _overrides.OverrideError:
                raise  # an override asked for that cannot apply to this model: the run must not go on without it
            except Exception as err:  # never let the probe break an optimizer's construction
                _note("could not follow an optimizer (%r)" % (err,))

        Optimizer.__init__ = __init__

    def _optimizer_made(self, optimizer):
        if self.device is None:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if getattr(p, "is_cuda", False):
                        self.device = p.device
                        break
        params = [p for group in optimizer.param_groups for p in group["params"]][:1]
        if params:
            optimizer._trainbench_first = params[0]
        self.optimizers.append((weakref.ref(optimizer), params, optimizer._trainbench_key))
        self.modules.add_optimizer(optimizer)

    def _wrap_step(self, original):
        probe = self

        @functools.wraps(original)  # copies torch's own markers (its profiler's 'hooked'), so torch wraps it once
        def step(self, *args, **kwargs):
            if probe._compiling():
                return original(self, *args, **kwargs)  # traced: counted after the compiled call (_patch_compile)
            local = probe.threads.state
            if local.opt_depth:
                return original(self, *args, **kwargs)  # super().step(), or an optimizer stepping another
            in_scaler = local.in_scaler
            if not in_scaler and probe.model.scaler is not None:
                return probe.model.step(self, args, kwargs)  # amp.dtype=fp16: through the probe's GradScaler, timed there
            if not in_scaler:
                if probe.stop_due:
                    probe.stop_if_due()
                if args or kwargs:
                    args, kwargs = probe._timed_closure(args, kwargs)
                local.step_mark = (time.perf_counter(), None) if probe.device is None else probe.mark()  # mark() inlined on the CPU
            local.opt_depth = 1
            try:
                out = original(self, *args, **kwargs)
            finally:
                local.opt_depth = 0
            if in_scaler:
                local.scaler_stepped = True
            else:
                probe._step_ended(self, local.step_mark, skipped=False)
            return out

        step._trainbench_step = True
        return step

    def _timed_closure(self, args, kwargs):
        """step(closure): the closure's forward and backward are theirs, not the optimizer's."""
        if args and callable(args[0]):
            closure, where = args[0], "arg"
        elif callable(kwargs.get("closure")):
            closure, where = kwargs["closure"], "kw"
        else:
            return args, kwargs
        probe = self
        first = True

        # Not functools.wraps: no optimizer reads a closure's name, and copying it cost more than the rest of this
        # wrapper at every step of a Lightning loop, whose steps all take a closure (issue 38).
        def timed(*a, **k):
            nonlocal first
            local = probe.threads.state
            probe.phase_done("optimizer", local.step_mark)
            # LBFGS evaluates the closure several times a step: the step's loss is the first (what step() returns).
            local.closure_repeat = not first
            first = False
            try:
                return closure(*a, **k)
            finally:
                local.closure_repeat = False
                local.step_mark = (time.perf_counter(), None) if probe.device is None else probe.mark()

        if where == "arg":
            return (timed,) + tuple(args[1:]), kwargs
        return args, dict(kwargs, closure=timed)

    def _step_ended(self, optimizer, mark, skipped):
        if self.flops is not None and self.flops.at_step is None:
            self.flops.optimizer_stepped()  # the iteration's forwards are all in: the next one's must not be counted
        key = getattr(optimizer, "_trainbench_key", None) or id(optimizer)
        if self.in_compiled:
            first = getattr(optimizer, "_trainbench_first", None)
            if first is not None:
                optimizer._trainbench_version = first._version  # seen here (a graph break): not again by _compiled_steps
        if self.backward_depth:
            # optimizer-in-backward: the step is part of the backward, which times it; it ends with the backward
            self.deferred_steps.append((key, skipped))
            return
        self.phase_done("optimizer", mark)
        self.iterations.stepped(key, time.perf_counter(), skipped)
        if self.stop_due:
            self.stop_if_due()

    def _compiled_steps(self):
        """After a compiled function ran: an optimizer whose parameters it updated in place stepped in it.
        Nothing of the probe runs inside compiled code, so a step there is seen from the outside, by the
        parameters' version counters (every in-place update bumps them; zero_grad does not)."""
        for ref, params, key in list(self.optimizers):
            optimizer = ref()
            if optimizer is None or not params:
                continue
            version = params[0]._version
            if version != optimizer._trainbench_version:
                optimizer._trainbench_version = version
                self._step_ended(optimizer, (time.perf_counter(), _SKIP), skipped=False)

    def _patch_backward(self, autograd):
        original = autograd.backward
        probe = self

        @functools.wraps(original)
        def backward(*args, **kwargs):
            if probe.backward_depth or probe._compiling():
                return original(*args, **kwargs)  # a backward inside a backward: reentrant checkpointing
            if probe.stop_due:
                probe.stop_if_due()
            probe.threads.state.depth = 0  # a forward that raised never closed its phase (torch < 2.1)
            if not probe.backward_seen:
                probe.backward_seen = True
                probe._scan_modules()  # the model is built and wrapped (DDP, torch.compile) by its first backward
            now = time.perf_counter()
            probe.iterations.backward(now)
            if args or "tensors" in kwargs:
                probe._keep_loss(args[0] if args else kwargs["tensors"])
            if probe.model.scaler is not None:
                args, kwargs = probe.model.scale_loss(args, kwargs)
            mark = (now, None) if probe.device is None else probe.mark(now)  # mark() inlined on the CPU (issue 38)
            probe.backward_depth += 1
            try:
                out = original(*args, **kwargs)
            finally:
                probe.backward_depth -= 1
                probe.phase_done("backward", mark)
                if probe.deferred_steps:
                    probe._flush_deferred_steps()
            if probe.stop_due:
                probe.stop_if_due()
            return out

        autograd.backward = backward

    def _scan_modules(self):
        try:
            if self.modules.params:
                self.modules.discover()
        except _overrides.OverrideError:
            raise
        except Exception as err:
            _note("module hooks left as they are (%r)" % (err,))

    def _flush_deferred_steps(self):
        steps, self.deferred_steps = self.deferred_steps, []
        now = time.perf_counter()
        for key, skipped in steps:
            self.iterations.stepped(key, now, skipped)

    def _keep_loss(self, tensors):
        t = tensors[0] if isinstance(tensors, (list, tuple)) and len(tensors) == 1 else tensors
        if self.scaled:
            entry = self.scaled.pop(id(t), None)
            if entry is not None and entry[0]() is t:
                t = entry[1]  # GradScaler.scale's input: the script's own loss
        if self.threads.state.closure_repeat:
            scalar = None  # a step(closure)'s later calls: the step's loss is the first's
        else:
            scalar = self.losses.scalar_of(t)
            if type(scalar) is float:  # a CPU loss, read: nothing more to find out from it
                self.iterations.seg.losses.append(scalar)
                return
        if self.device is None and getattr(t, "is_cuda", False):
            self.device = t.device
        if scalar is not None:
            self.iterations.seg.losses.append(scalar)

    def _patch_grad_scalers(self, torch):
        classes = []
        amp = getattr(torch, "amp", None)
        if amp is not None and hasattr(amp, "GradScaler"):
            classes.append(amp.GradScaler)
        cuda_amp = getattr(getattr(torch, "cuda", None), "amp", None)
        if cuda_amp is not None and hasattr(cuda_amp, "GradScaler"):
            classes.append(cuda_amp.GradScaler)
        for cls in classes:
            if "scale" in cls.__dict__:
                cls.scale = self._wrap_scale(cls.__dict__["scale"])
            if "step" in cls.__dict__:
                cls.step = self._wrap_scaler_step(cls.__dict__["step"])

    def _wrap_scale(self, original):
        probe = self

        @functools.wraps(original)
        def scale(self, outputs):
            out = original(self, outputs)
            if probe._compiling() or out is outputs:
                return out
            if self is not probe.model.scaler:
                probe.model.script_scaler = True
            try:
                if isinstance(out, probe.torch.Tensor) and out.numel() == 1 and out.is_floating_point():
                    if len(probe.scaled) > 64:
                        probe.scaled.clear()
                    probe.scaled[id(out)] = (weakref.ref(out), outputs.detach())
            except Exception:
                pass
            return out

        return scale

    def _wrap_scaler_step(self, original):
        probe = self

        @functools.wraps(original)
        def step(self, optimizer, *args, **kwargs):
            local = probe.threads.state
            if probe._compiling() or local.in_scaler or local.opt_depth:
                return original(self, optimizer, *args, **kwargs)
            probe.stop_if_due()
            local.in_scaler = True
            local.scaler_stepped = False
            local.step_mark = probe.mark()
            try:
                out = original(self, optimizer, *args, **kwargs)
            finally:
                local.in_scaler = False
            probe._step_ended(optimizer, local.step_mark, skipped=not local.scaler_stepped)
            return out

        return step

    def _patch_compile(self, torch):
        original = getattr(torch, "compile", None)
        if original is None:
            return  # torch 1.x
        probe = self

        @functools.wraps(original)
        def compile(*args, **kwargs):
            if not probe.dynamo_kept_out:
                probe.dynamo_kept_out = True
                _keep_dynamo_out()
            if probe.flops is not None:
                probe.flops.abandon()  # before dynamo first traces: none of the counter's hooks may be in its graphs
            if args and getattr(getattr(args[0], "__func__", None), "_trainbench_step", False):
                # torch.compile(opt.step): compile the optimizer's own step, not the probe's wrapper
                args = (types.MethodType(args[0].__func__.__wrapped__, args[0].__self__),) + tuple(args[1:])
            compiled = original(*args, **kwargs)
            if not args or args[0] is None:  # torch.compile(backend=...) used as a decorator factory
                return functools.wraps(compiled)(lambda fn: probe._counting(compiled(fn), fn))
            return probe._counting(compiled, args[0])

        torch.compile = compile

    def _counting(self, compiled, fn):
        """A compiled function (not a module, whose forward steps no optimizer) counts the steps taken inside it."""
        if isinstance(fn, self.torch.nn.Module) or not callable(compiled):
            return compiled
        probe = self

        @functools.wraps(compiled)
        def run(*args, **kwargs):
            if probe._compiling():
                return compiled(*args, **kwargs)
            probe._note_versions()
            probe.in_compiled += 1
            try:
                out = compiled(*args, **kwargs)
            finally:
                probe.in_compiled -= 1
            probe._compiled_steps()
            return out

        return run

    def _note_versions(self):
        for ref, params, key in self.optimizers:
            optimizer = ref()
            if optimizer is not None and params:
                optimizer._trainbench_version = params[0]._version

    # ---- timing --------------------------------------------------------------------------------
    def mark(self, now=None):
        """The start of a phase: a host time, and a CUDA event on the training device's current stream."""
        if now is None:
            now = time.perf_counter()
        if self.device is None:
            return (now, None)
        cuda = self.torch.cuda
        if cuda.is_current_stream_capturing():
            return (now, _SKIP)  # CUDA-graph capture: nothing runs now, and events may not be read
        event = cuda.Event(enable_timing=True)
        event.record(cuda.current_stream(self.device))
        return (now, event)

    def phase_done(self, phase, mark):
        t0, start = mark
        if start is None:
            # Iterations.phase inlined: the probe's calls between a large step's operations run from memory, not
            # cache, and each call saved is that much less of it (issue 38).
            ms = (time.perf_counter() - t0) * 1000
            it = self.iterations
            if it.tentative is not None:
                it.tentative.phases.append((phase, ms))
            else:
                it.seg.phases_ms[phase] += ms
            return
        if start is _SKIP:
            return
        cuda = self.torch.cuda
        if cuda.is_current_stream_capturing():
            return
        end = cuda.Event(enable_timing=True)
        end.record(cuda.current_stream(self.device))
        self.iterations.cuda_phase(phase, start, end)

    def _read_cuda(self, wait):
        """Phase times of finished CUDA work, sent as they become readable (waiting only at the end)."""
        if not wait and self.torch.cuda.is_current_stream_capturing():
            return
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

    def _iteration_closed(self, number, it):
        self.steps = number
        # Made when sent (channel.py): with others, after the step. The first step and the first measured one go at
        # once: Trainbench opens its telemetry window on their arrival.
        self.channel.send((_step_message, (number, it)), number == 1 or number == self.warmup + 1)
        if it.cuda or self.pending_cuda:
            self._queue_cuda(number, it.cuda)
        self.losses.step_closed(number, it.losses, it.end)
        if self.collectives is not None:
            items = self.collectives.take()
            if items:
                self.send({"type": "collectives", "step": number, "items": items})
        if number == 1:
            if self.seed is not None:
                self.send({"type": "seed", "by": "trainbench", "seed": self.seed, "where": "torch import"})
            held, self.held = self.held, []
            for message in held:
                self.send(message)
            if self.collectives is not None:
                self._clock("start")
        if number == self.warmup + 1:
            self._check_flags("at the first measured step")
        try:
            if self.flops is not None and not self.flops.done:
                self.flops.iteration_closed(number, it.samples)
        except Exception as err:
            _note("model FLOPs not counted (%r)" % (err,))
        try:
            if self.modules.discovering:
                self.modules.iteration_closed(number)
        except _overrides.OverrideError:
            raise
        except Exception as err:
            _note("module hooks left as they are (%r)" % (err,))
        if number >= self.stop_at and not self.done:
            self.finish("steps")
            self.stop_due = True
        elif number > self.warmup + 1 and self.collectives is None and not self.modules.discovering and (self.flops is None or self.flops.done):
            self.iterations.emit = self._settled_closed

    def _settled_closed(self, number, it):
        """_iteration_closed once only the step itself is left to do (past the first measured step, module hooks
        settled, FLOPs counted, no collectives): the same, less its checks, at every step of a long run (issue 38).
        A new optimizer's modules to watch, or the step limit, hand the step back to _iteration_closed."""
        if number >= self.stop_at or self.modules.discovering:
            self.iterations.emit = self._iteration_closed
            return self._iteration_closed(number, it)
        self.steps = number
        self.channel.send((_step_message, (number, it)), False)
        if it.cuda or self.pending_cuda:
            self._queue_cuda(number, it.cuda)
        self.losses.step_closed(number, it.losses, it.end)

    def _queue_cuda(self, number, cuda):
        for phase, start, end in cuda:
            self.pending_cuda.append((number, phase, start, end))
        self._read_cuda(wait=False)

    def stop_if_due(self):
        """The bounded trial ends at a safe point: never inside a backward (a gradient hook) or compiled code."""
        if self.stop_due and not self.stopping and not self.backward_depth:
            self.stopping = True
            # Stopped before the script's own destroy_process_group(): a process group left to the interpreter's exit
            # can abort the rank (gloo: "terminate called without an active exception", exit -6), failing the
            # other nodes' part of the job. Released once the script has unwound, unless the script did it.
            atexit.register(_release_process_group, self.torch)
            # SystemExit unwinds the script as a normal exit would: finally blocks, DataLoader workers shut down.
            raise SystemExit(0)

    def _check_flags(self, when):
        try:
            now = _overrides.read_flags(self.torch, self.overrides)
        except Exception as err:  # reading a flag must never stop the script
            _note("could not read torch's flags back %s (%r)" % (when, err))
            return
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
        if reason == "exit":
            self.iterations.finish()  # the last iteration is whole once the script ends
            if self.done:
                return  # it was the last of a bounded trial
        self.done = True
        memory = {"cudaPeakBytes": None, "cudaTotalBytes": None, "device": "cpu"}
        try:
            if self.device is not None:
                cuda = self.torch.cuda
                memory = {
                    "cudaPeakBytes": int(cuda.max_memory_allocated(self.device)),
                    "cudaTotalBytes": int(cuda.get_device_properties(self.device).total_memory),
                    "device": "cuda:%d" % self.device.index if self.device.index is not None else str(self.device),
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
            for summary in self.model.summaries():
                self.send(summary)
            if self.copies is not None:
                self.send(self.copies())
        except Exception as err:
            _note("could not sum up the model's overrides (%r)" % (err,))
        try:
            import resource

            memory["hostPeakRssBytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except Exception:
            pass
        if self.measure_peak and self.flops is not None and self.flops.counted and self.steps > 0:
            try:
                self.send(matmul_peak(self.torch, self.device))  # after the measured steps and the memory peak: neither sees it
            except Exception as err:
                _note("torch's matmul peak not measured (%r)" % (err,))
        # On CUDA only: a CPU script copies nothing to a device (the benchmark says so).
        if self.measure_peak and self.device is not None and self.batch_layout is not None and self.steps > 0:
            try:
                self.send(time_batch_copy(self.torch, self.batch_layout, self.device))
            except Exception as err:
                _note("the batch's pinned copy not timed (%r)" % (err,))
        if self.collectives is not None and self.steps > 0:
            self._clock("end")
        if self.collectives is not None and reason == "steps":
            try:  # every rank stops at the same step, so every rank reaches this all-reduce together
                floor = allreduce_floor(self.torch, self.device, self.collectives.step_bytes)
                if floor is not None:
                    self.send(floor)
            except Exception as err:  # the floor must never fail the launch
                _note("the all-reduce floor was not measured (%r)" % (err,))
        if self.steps > 0 or reason == "steps":
            self.send({"type": "done", "reason": reason, "steps": self.steps, "memory": memory})
        self.channel.close()


def _release_process_group(torch):
    try:
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
    except Exception as err:  # at exit: say it, never raise
        _note("the process group was not released at exit (%r)" % (err,))


# The 'step' message of a closed iteration, as its JSON line: formatted, not a dict given to the encoder, which
# cost ~8 µs of a 5 ms step's 2% budget (issue 38); %.4f keeps 0.1 µs of each duration in ms. Every figure is a
# difference of perf_counter readings or a CUDA event's elapsed time: finite, so the line is always valid JSON.
_STEP_LINE = (
    '{"type":"step","step":%d,"durMs":%.4f,"samples":%d,"batches":%d,"dataMs":%.4f,'
    '"phasesMs":{"forward":%.4f,"loss":%.4f,"backward":%.4f,"optimizer":%.4f},"timing":"%s",'
    # Not yet in Trainbench's message schema (dropped there): what the iteration was made of.
    '"optimizerSteps":%d,"skipped":%s,"evalMs":%.4f}'
)


def _step_message(number, it):
    """The 'step' message of a closed iteration (a JSON line: see _STEP_LINE)."""
    ph = it.phases_ms
    return _STEP_LINE % (
        number,
        max(0.0, (it.end - it.start) * 1000 - it.eval_ms - it.probe_ms),
        it.samples,
        it.batches,
        it.data_ms,
        ph["forward"],
        ph["loss"],
        ph["backward"],
        ph["optimizer"],
        "cuda-events" if it.cuda else "host-clock",
        len(it.steps),
        "true" if it.skipped else "false",
        it.eval_ms,
    )


_WRAPPERS = {"step", "backward", "__next__", "scale", "timed", "run", "compile", "__init__", "_made", "pre", "post", "__init_subclass__", "_counting", "__call__", "clip"}


def _keep_dynamo_out():
    """Dynamo compiles every new frame while a compiled function runs, the probe's own too when the compiled
    code calls them eagerly (after a graph break): that would trace the probe's bookkeeping (graph breaks,
    recompiles). The probe's code objects are marked to run as they are, with whatever they call. Traced
    from the script's code, the probe's wrappers are still inlined (and do nothing: is_compiling)."""
    try:
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except Exception as err:  # an older or newer dynamo: the probe's frames may be compiled, as before
        _note("could not keep torch.compile out of the probe's frames (%r)" % (err,))
        return
    everything = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    # The wrappers call the script's and torch's own code (a step, a closure, a DataLoader): that stays compiled.
    just_this = FrameExecStrategy(FrameAction.SKIP, FrameAction.DEFAULT)
    seen = set()
    for name, module in list(sys.modules.items()):
        if name != __name__ and not name.startswith(__name__ + "."):
            continue
        stack = [v for v in vars(module).values() if isinstance(v, (types.FunctionType, type))]
        while stack:
            obj = stack.pop()
            if isinstance(obj, type):
                if obj.__module__ == module.__name__:
                    stack.extend(v for v in vars(obj).values() if isinstance(v, (types.FunctionType, property)))
                continue
            if isinstance(obj, property):
                stack.extend(f for f in (obj.fget, obj.fset) if f is not None)
                continue
            codes = [obj.__code__]
            while codes:
                code = codes.pop()
                if code in seen:
                    continue
                seen.add(code)
                set_code_exec_strategy(code, just_this if code.co_name in _WRAPPERS else everything)
                codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))


def _every_subclass(base, patch):
    """Applies patch to base, to its subclasses now, and to every subclass defined later."""
    stack = [base]
    while stack:
        cls = stack.pop()
        patch(cls)
        stack.extend(cls.__subclasses__())
    _on_subclass(base, patch)


def _on_subclass(base, patch):
    previous = base.__dict__.get("__init_subclass__")

    def __init_subclass__(cls, **kwargs):
        if previous is not None:
            previous.__func__(cls, **kwargs)
        else:
            super(base, cls).__init_subclass__(**kwargs)
        try:
            patch(cls)
        except Exception as err:
            _note("could not follow %s (%r)" % (cls.__name__, err))

    base.__init_subclass__ = classmethod(__init_subclass__)
