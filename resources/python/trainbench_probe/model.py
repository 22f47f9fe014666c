"""amp.dtype, memory.channels_last and compile.mode on the model the optimizer trains, with no change to the script.

The model is each outermost module holding an optimizer's parameters (modules.py finds them). Its
forward is replaced by a wrapper, as Accelerate wraps a prepared model's: it runs under torch.autocast
for the model's device, and floating outputs come back as float32, so the script's loss computes as
it did. fp16 adds dynamic loss scaling with torch's own GradScaler: the loss scaled at backward(),
the gradients unscaled before the script's clip_grad_norm_ / clip_grad_value_, each optimizer
stepped through the scaler (a step with inf/NaN gradients is skipped, and counted), the scale updated
before the next backward(). channels_last converts the model's parameters once and its 4-D floating
inputs at each call. compile.mode compiles the model in place (Module.compile, so the script's own
references to it stay valid), around the autocast wrapper; dynamo's compile callbacks time every
compilation and count those that happen during the measured steps (recompilations). Without an
override the probe only reports the model (its convolutions) and whether the script autocasts on
its own, which is what the wizard decides from.
"""
SHORT = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def autocast_dtype(torch, device_type):
    """The dtype autocast computes in now on this device type, or None where it is off."""
    try:
        return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) else None  # torch 2.4+
    except (TypeError, AttributeError):
        pass
    if device_type == "cpu":
        return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
    if device_type == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
    return None


def short(dtype):
    name = str(dtype).replace("torch.", "")
    return SHORT.get(name, name)


def _first_param(module):
    return next(iter(module.parameters()), None)


class _Forward:
    """The model's forward as the overrides run it. A plain object, not a closure over the module, so a
    copy of the model (copy.deepcopy for an EMA) gets a wrapper around its own forward, not this one's."""

    def __init__(self, knobs, module, original):
        self.knobs = knobs
        self.module = module
        self.original = original  # None: the class's forward
        self._param = None  # the first parameter, found at the first call (a copy's module is half made when this is)

    def device_type(self):
        if self._param is None:
            self._param = _first_param(self.module)
        return self._param.device.type if self._param is not None else "cpu"

    def __call__(self, *args, **kwargs):
        knobs = self.knobs
        if knobs.channels_last:
            args, kwargs = knobs.to_channels_last(args), knobs.to_channels_last(kwargs)
        run = self.original if self.original is not None else type(self.module).forward.__get__(self.module)
        if knobs.amp is None:
            return run(*args, **kwargs)
        torch = knobs.torch
        device_type = self.device_type()
        if not knobs.probe._compiling():
            own = autocast_dtype(torch, device_type)
            if own is not None:
                raise knobs.failed("the script runs it under its own autocast (%s) already: wrapping it again would change nothing" % short(own), self.module)
        with torch.autocast(device_type=device_type, dtype=knobs.amp):
            out = run(*args, **kwargs)
        return knobs.to_float32(out)

    def __reduce__(self):
        """torch.save(model) pickles the module's attributes, this among them: the checkpoint gets the script's own
        forward instead, as if the probe had never run, and loads where no probe is installed."""
        if self.original is not None:
            return self.original.__reduce__()
        return (getattr, (self.module, "forward"))

    def __deepcopy__(self, memo):
        import copy

        copied = memo.get(id(self.module))
        if copied is None:
            return self
        original = copy.deepcopy(self.original, memo) if self.original is not None else None
        return _Forward(self.knobs, copied, original)


class ModelKnobs:
    def __init__(self, torch, probe, overrides):
        self.torch = torch
        self.probe = probe
        self.amp_name = overrides.get("amp.dtype")
        self.amp = getattr(torch, DTYPES[self.amp_name]) if self.amp_name else None
        self.channels_last = overrides.get("memory.channels_last") is True
        self.compile_mode = overrides.get("compile.mode")
        self.compiles = []  # (seconds, iteration it happened in) of every compilation dynamo reported
        self._compile_started = None
        self.roots = []  # ids of the models seen, each reported once
        self.scaler = None
        self.unscaled = set()  # ids of optimizers unscaled since the last update
        self.stepped = False  # an optimizer stepped through the scaler since the last update
        self.skipped = 0
        self.own_autocast_checked = False
        self.script_scaler = False

    def active(self):
        return self.amp is not None or self.channels_last or self.compile_mode is not None

    def failed(self, why, module=None, key=None):
        if key is None:
            key = "amp.dtype" if self.amp is not None else "memory.channels_last"
        value = {"amp.dtype": self.amp_name, "compile.mode": self.compile_mode}.get(key, True)
        made = "the model %s" % type(module).__name__ if module is not None else "the model"
        return self.probe.override_failed(key, value, None, why, made=made)

    # ---- the models ---------------------------------------------------------------------------
    def roots_found(self, roots):
        """The outermost modules holding an optimizer's parameters: each reported, and wrapped when asked."""
        for root in roots:
            if id(root) in self.roots or any(getattr(m, "__dict__", {}).get("_trainbench_model") for m in root.modules()):
                continue  # seen, or a wrapper (DDP, torch.compile) around a model seen already
            self.roots.append(id(root))
            root.__dict__["_trainbench_model"] = True
            param = _first_param(root)
            convs = sum(1 for m in root.modules() if isinstance(m, self.torch.nn.Conv2d))
            info = {"type": "model", "class": type(root).__name__, "convs": convs, "device": str(param.device) if param is not None else "cpu"}
            if param is not None and param.device.type == "cuda":
                try:
                    info["bf16"] = bool(self.torch.cuda.is_bf16_supported())
                except Exception:
                    pass
            self.probe.send(info)
            if self.active():
                self._wrap(root, convs, param)

    def _wrap(self, root, convs, param):
        torch = self.torch
        name = type(root).__name__
        device_type = param.device.type if param is not None else "cpu"
        if self.channels_last:
            if convs == 0:
                raise self.failed("it has no 2-D convolution, so channels_last changes nothing for it", root, "memory.channels_last")
            root.to(memory_format=torch.channels_last)
            self.probe.applied("memory.channels_last", True, "model %s" % name)
        if self.amp is not None:
            self._check_autocast(device_type, root)
            if self.amp_name == "fp16" and self.scaler is None:
                self.scaler = self._make_scaler(device_type, root)
            self.probe.applied("amp.dtype", self.amp_name, "model %s" % name)
        if self.amp is not None or self.channels_last:
            root.forward = _Forward(self, root, root.__dict__.get("forward"))
        if self.compile_mode is not None:
            self._compile(root)

    def _compile(self, root):
        torch = self.torch
        if not hasattr(torch, "compile"):
            raise self.failed("torch.compile needs torch 2.0 or newer; this is torch %s" % torch.__version__, root, "compile.mode")
        self._time_compilations()
        if hasattr(root, "compile"):
            root.compile(mode=self.compile_mode)  # torch 2.2+: in place, through the probe's torch.compile
        else:
            root.forward = torch.compile(root.forward, mode=self.compile_mode)
        self.probe.applied("compile.mode", self.compile_mode, "model %s" % type(root).__name__)

    def _time_compilations(self):
        """Dynamo's compile callbacks (torch 2.x): each compilation's seconds and the iteration it fell in."""
        import time

        try:
            from torch._dynamo import callback
        except Exception:
            return
        knobs = self

        def start(*_args):
            if knobs._compile_started is None:
                knobs._compile_started = time.perf_counter()

        def end(*_args):
            if knobs._compile_started is not None:
                knobs.compiles.append((time.perf_counter() - knobs._compile_started, knobs.probe.steps + 1))
                knobs._compile_started = None

        try:
            callback.on_compile_start(start)
            callback.on_compile_end(end)
        except Exception:
            pass

    def _check_autocast(self, device_type, root):
        """torch warns and goes on in float32 where autocast lacks the dtype (1.13's CPU and fp16): refuse instead."""
        import warnings

        torch = self.torch
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with torch.autocast(device_type=device_type, dtype=self.amp):
                    got = autocast_dtype(torch, device_type)
        except (RuntimeError, ValueError, TypeError) as err:
            raise self.failed("torch %s refused autocast on %s: %s" % (torch.__version__, device_type, err), root)
        if got != self.amp:
            raise self.failed("torch %s does not autocast to %s on %s" % (torch.__version__, self.amp_name, device_type), root)

    def _make_scaler(self, device_type, root):
        torch = self.torch
        amp = getattr(torch, "amp", None)
        GradScaler = getattr(amp, "GradScaler", None) if amp is not None else None
        try:
            if GradScaler is not None:
                return GradScaler(device_type)  # torch 2.3+: any device
            if device_type == "cuda":
                return torch.cuda.amp.GradScaler()
        except (RuntimeError, ValueError, TypeError) as err:
            raise self.failed("torch %s has no loss scaling on %s: %s" % (torch.__version__, device_type, err), root)
        raise self.failed("fp16 needs loss scaling, and torch %s's GradScaler works on CUDA only (this model is on %s)" % (torch.__version__, device_type), root)

    # ---- inputs and outputs ---------------------------------------------------------------------
    def to_channels_last(self, value):
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if value.dim() == 4 and value.is_floating_point():
                return value.contiguous(memory_format=torch.channels_last)
            return value
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(self.to_channels_last(v) for v in value)
        if type(value) is list:
            return [self.to_channels_last(v) for v in value]
        if type(value) is dict:
            return {k: self.to_channels_last(v) for k, v in value.items()}
        return value

    def to_float32(self, value):
        """Half outputs back to float32 (containers rebuilt as they were; anything else returned as it is)."""
        torch = self.torch
        if isinstance(value, torch.Tensor):
            return value.float() if value.dtype in (torch.float16, torch.bfloat16) else value
        try:
            if isinstance(value, tuple):
                items = [self.to_float32(v) for v in value]
                return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
            if isinstance(value, list):
                return type(value)(self.to_float32(v) for v in value)
            if isinstance(value, dict):
                return type(value)((k, self.to_float32(v)) for k, v in value.items())
        except Exception:
            return value  # a container that cannot be rebuilt so: the script gets it as the model made it
        return value

    # ---- the script's own autocast ------------------------------------------------------------
    def check_own_autocast(self, module):
        """At the first training forward: does the script autocast on its own? (The override's wrapper enters later.)"""
        self.own_autocast_checked = True
        param = _first_param(module)
        device_type = param.device.type if param is not None else "cpu"
        try:
            own = autocast_dtype(self.torch, device_type)
        except Exception:
            return
        if own is not None:
            self.probe.send({"type": "autocast", "dtype": short(own), "device": device_type})

    # ---- fp16 loss scaling ----------------------------------------------------------------------
    def scale_loss(self, args, kwargs):
        """backward()'s arguments with the loss scaled; the scale is updated first when a step used the last one."""
        if self.script_scaler:
            raise self.failed("the script scales its loss with its own GradScaler already")
        tensors = args[0] if args else kwargs.get("tensors")
        t = tensors[0] if isinstance(tensors, (list, tuple)) and len(tensors) == 1 else tensors
        if not (isinstance(t, self.torch.Tensor) and t.numel() == 1 and (args[1:2] or kwargs.get("grad_tensors")) in ((), None, [None], (None,))):
            raise self.failed("fp16 loss scaling scales one scalar loss, and backward() was given %s" % _what(tensors))
        if self.stepped:
            self.scaler.update()
            self.stepped = False
            self.unscaled.clear()
        scaled = self.scaler.scale(t)
        self.probe.scaled.pop(id(scaled), None)  # ours: the loss it scaled was kept already
        if args:
            return (scaled,) + tuple(args[1:]), kwargs
        return args, dict(kwargs, tensors=scaled)

    def unscale_all(self):
        """Before the script's gradient clipping: its threshold is for true gradients, not scaled ones."""
        for ref, _params, _key in list(self.probe.optimizers):
            optimizer = ref()
            if optimizer is not None and id(optimizer) not in self.unscaled:
                self.scaler.unscale_(optimizer)
                self.unscaled.add(id(optimizer))

    def step(self, optimizer, args, kwargs):
        """An optimizer's step through the scaler: skipped when the gradients hold inf or NaN."""
        if (args and callable(args[0])) or callable(kwargs.get("closure")):
            raise self.failed("%s.step() takes a closure, which GradScaler cannot step" % type(optimizer).__name__)
        out = self.scaler.step(optimizer, *args, **kwargs)
        self.stepped = True
        if not getattr(self.probe.threads.state, "scaler_stepped", True):
            self.skipped += 1
        return out

    def summaries(self):
        """What the overrides did, sent at the end: the loss scaler's skipped steps, the compilations."""
        out = []
        if self.amp is not None:
            amp = {"type": "amp", "dtype": self.amp_name, "skippedSteps": self.skipped}
            if self.scaler is not None:
                try:
                    amp["scale"] = float(self.scaler.get_scale())
                except Exception:
                    pass
            out.append(amp)
        if self.compile_mode is not None:
            warmup = self.probe.warmup
            out.append(
                {
                    "type": "compile",
                    "mode": self.compile_mode,
                    "compilations": len(self.compiles),
                    "seconds": sum(s for s, _ in self.compiles),
                    # After the warm-up: recompilations the measured steps paid for.
                    "inMeasuredSteps": sum(1 for _, step in self.compiles if step > warmup),
                }
            )
        return out


def _what(tensors):
    if isinstance(tensors, (list, tuple)):
        return "%d tensors" % len(tensors)
    shape = getattr(tensors, "shape", None)
    return "a tensor of shape %s" % (tuple(shape),) if shape is not None else type(tensors).__name__


def patch_clipping(torch, knobs):
    """clip_grad_norm_ / clip_grad_value_ unscale first under fp16 (where the script calls them from)."""
    import functools

    from torch.nn.utils import clip_grad

    utils = torch.nn.utils
    for name in ("clip_grad_norm_", "clip_grad_value_"):
        original = getattr(utils, name, None)
        if original is None or getattr(original, "_trainbench", False):
            continue

        def make(original):
            @functools.wraps(original)
            def clip(*args, **kwargs):
                if knobs.scaler is not None and not knobs.probe._compiling():
                    knobs.unscale_all()
                return original(*args, **kwargs)

            clip._trainbench = True
            return clip

        wrapped = make(original)
        setattr(utils, name, wrapped)
        if getattr(clip_grad, name, None) is original:
            setattr(clip_grad, name, wrapped)
