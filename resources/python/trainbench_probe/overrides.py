"""Named overrides (`--set key=value`): checked here again, applied to every DataLoader and to torch's flags.

Trainbench validates them before launching (src-main/api/script-target.ts holds
the same table); the probe checks again because it is the one that applies them.
"""
import functools
import inspect
import os
import sys
import threading

MATMUL_PRECISIONS = ("highest", "high", "medium")

# key -> (kind, DataLoader argument or None)
KNOWN = {
    "dataloader.num_workers": ("int0", "num_workers"),
    "dataloader.prefetch_factor": ("int1", "prefetch_factor"),
    "dataloader.pin_memory": ("bool", "pin_memory"),
    "dataloader.persistent_workers": ("bool", "persistent_workers"),
    "dataloader.batch_size": ("int1", "batch_size"),
    "cudnn.benchmark": ("bool", None),
    "matmul.precision": ("precision", None),
    "optim.impl": ("impl", None),
    "amp.dtype": ("amp", None),
    "memory.channels_last": ("bool", None),
    "compile.mode": ("compile", None),
    "optim.set_to_none": ("bool", None),
    "copy.non_blocking": ("bool", None),
    "ddp.bucket_cap_mb": ("int1", None),
    "ddp.gradient_as_bucket_view": ("bool", None),
    "ddp.static_graph": ("bool", None),
}


# The largest value of a whole-number override (batch sizes up to 1 << 24).
MAX_VALUE = {"dataloader.num_workers": 1024, "dataloader.prefetch_factor": 1024, "ddp.bucket_cap_mb": 16384}


class OverrideError(RuntimeError):
    """An override that could not be applied: the run must fail, never go on without it."""


def check(overrides):
    for key, value in overrides.items():
        if key not in KNOWN:
            raise OverrideError("unknown override %r; known keys: %s" % (key, ", ".join(sorted(KNOWN))))
        kind = KNOWN[key][0]
        # The same bounds as Trainbench's table (api/script-target.ts): a node that joins a job takes the overrides
        # from the measuring node's hub, which proves nothing about itself.
        top = MAX_VALUE.get(key, 1 << 24)
        ok = {
            "int0": isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= top,
            "int1": isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= top,
            "bool": isinstance(value, bool),
            "precision": value in MATMUL_PRECISIONS,
            "impl": value in ("foreach", "fused"),
            "amp": value in ("bf16", "fp16"),
            "compile": value in ("default", "reduce-overhead", "max-autotune"),
        }[kind]
        if not ok:
            raise OverrideError("override %s has a bad value %r" % (key, value))
    return overrides


def caller_location():
    """file:line of the first frame outside torch and the probe: where the script made the object."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not name.startswith(here) and os.sep + "torch" + os.sep not in name:
            return "%s:%d" % (name, frame.f_lineno)
        frame = frame.f_back
    return "unknown"


LOADER_SETTINGS = ("num_workers", "prefetch_factor", "pin_memory", "persistent_workers", "batch_size")


def _plain(value):
    return value if value is None or isinstance(value, (bool, int, float, str)) else repr(value)


def loader_overrides(overrides):
    return {KNOWN[k][1]: (k, v) for k, v in overrides.items() if KNOWN[k][1] is not None}


_local = threading.local()


def outermost_init(original, made, family, marker):
    """A class's __init__ replaced so `made(self, args, kwargs)` runs once per object: a subclass's __init__ calling
    its base's (both wrapped, same `family` thread-local) runs the base's as it is, and the outermost one applies
    and reports. `marker` names the attribute that says a class is wrapped already."""

    def __init__(self, *args, **kwargs):
        if getattr(family, "depth", 0):
            return original(self, *args, **kwargs)
        family.depth = 1
        try:
            made(self, args, kwargs)
        finally:
            family.depth = 0

    __init__ = functools.wraps(original)(__init__)
    __init__.__wrapped__ = original
    setattr(__init__, marker, True)
    return __init__


def effective_batch_size(loader):
    """The loader's batch size, also when a batch_sampler makes the batches (accelerate re-shards loaders so)."""
    size = getattr(loader, "batch_size", None)
    if size is None:
        size = getattr(getattr(loader, "batch_sampler", None), "batch_size", None)
    return size if isinstance(size, int) and not isinstance(size, bool) else None


def patch_dataloader_init(DataLoader, overrides, report):
    """Every DataLoader the script creates, subclasses included (torchdata's StatefulDataLoader never calls
    DataLoader.__init__), gets the dataloader.* overrides, or the script stops with why not; each reports
    its settings as made (the wizard's starting point when nothing is overridden)."""
    from torch.utils.data import BatchSampler

    wanted = loader_overrides(overrides)

    def wrap(cls):
        original = cls.__dict__.get("__init__")
        if original is None or getattr(original, "_trainbench", False):
            return
        signature = inspect.signature(original)

        def _made(self, args, kwargs):
            where = caller_location()
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:
                return original(self, *args, **kwargs)  # torch says what is wrong with the call itself
            arguments = bound.arguments
            extra = next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)

            def value_of(name):
                if name in arguments:
                    return arguments[name]
                return arguments.get(extra, {}).get(name) if extra else None

            def set_value(name, value):
                if name in signature.parameters:
                    arguments[name] = value
                else:
                    arguments.setdefault(extra, {})[name] = value

            for name, (key, value) in wanted.items():
                if name not in signature.parameters and extra is None:
                    raise report.override_failed(key, value, where, "this %s takes no %r argument" % (cls.__name__, name))
                if name == "batch_size":
                    sampler = value_of("batch_sampler")
                    if sampler is not None:
                        own = getattr(sampler, "batch_size", None)
                        if own == value:
                            continue  # made from a loader that had the override (accelerate's re-sharded loaders)
                        if type(sampler) is BatchSampler:
                            set_value("batch_sampler", BatchSampler(sampler.sampler, value, sampler.drop_last))
                            continue
                        raise report.override_failed(
                            key, value, where, "the DataLoader takes a batch_sampler (%s) that makes its own batches of %r" % (type(sampler).__name__, own)
                        )
                    if name in arguments and arguments[name] is None:
                        raise report.override_failed(key, value, where, "the DataLoader has batch_size=None (no automatic batching)")
                set_value(name, value)
            try:
                original(*bound.args, **bound.kwargs)
            except (ValueError, TypeError) as err:
                keys = ", ".join("%s=%s" % (k, _show(v)) for k, v in wanted.values())
                raise report.override_failed(keys, None, where, "torch refused it: %s" % (err,))
            for name, (key, value) in wanted.items():
                got = effective_batch_size(self) if name == "batch_size" else getattr(self, name, value)
                if got != value:
                    raise report.override_failed(key, value, where, "the DataLoader kept %s=%r" % (name, got))
                report.applied(key, value, where)
            settings = {name: _plain(getattr(self, name, None)) for name in LOADER_SETTINGS}
            settings["batch_size"] = effective_batch_size(self)
            report.loader(settings, where)

        cls.__init__ = outermost_init(original, _made, _local, "_trainbench")

    stack = [DataLoader]
    while stack:
        cls = stack.pop()
        wrap(cls)
        stack.extend(cls.__subclasses__())
    previous = DataLoader.__dict__.get("__init_subclass__")

    def __init_subclass__(cls, **kwargs):
        if previous is not None:
            previous.__func__(cls, **kwargs)
        else:
            super(DataLoader, cls).__init_subclass__(**kwargs)
        wrap(cls)

    DataLoader.__init_subclass__ = classmethod(__init_subclass__)


# matmul.precision through the fp32_precision API of torch 2.9+, as torch's own legacy setter maps it.
# The legacy get/set must not be mixed with it: after a script used the new API, the legacy getter raises.
_FP32 = {"highest": ("ieee", "ieee"), "high": ("tf32", "tf32"), "medium": ("tf32", "bf16")}


def _fp32_api(torch):
    backends = torch.backends
    try:
        cuda, mkldnn = backends.cuda.matmul, backends.mkldnn.matmul
        cuda.fp32_precision, mkldnn.fp32_precision  # noqa: B018 (present from torch 2.9)
        return cuda, mkldnn
    except (AttributeError, RuntimeError):
        return None


def apply_flags(torch, overrides):
    """torch-wide flags: set as soon as torch is imported; checked again at the first step and at the end."""
    if "cudnn.benchmark" in overrides:
        torch.backends.cudnn.benchmark = overrides["cudnn.benchmark"]
    if "matmul.precision" in overrides:
        api = _fp32_api(torch)
        if api is not None:
            api[0].fp32_precision, api[1].fp32_precision = _FP32[overrides["matmul.precision"]]
            return
        if not hasattr(torch, "set_float32_matmul_precision"):
            raise OverrideError("matmul.precision needs torch 1.12 or newer (this is %s)" % torch.__version__)
        torch.set_float32_matmul_precision(overrides["matmul.precision"])


def read_flags(torch, overrides):
    """The flags as they are now, for the keys asked for."""
    out = {}
    if "cudnn.benchmark" in overrides:
        out["cudnn.benchmark"] = bool(torch.backends.cudnn.benchmark)
    if "matmul.precision" in overrides:
        api = _fp32_api(torch)
        if api is not None:
            now = (api[0].fp32_precision, api[1].fp32_precision)
            names = [name for name, pair in _FP32.items() if pair == now]
            out["matmul.precision"] = names[0] if names else "cuda %s, cpu %s" % now
        else:
            out["matmul.precision"] = torch.get_float32_matmul_precision()
    return out


def _show(value):
    return str(value).lower() if isinstance(value, bool) else str(value)
