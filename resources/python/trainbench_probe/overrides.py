"""Named overrides (`--set key=value`): checked here again, applied to every DataLoader and to torch's flags.

Trainbench validates them before launching (src-main/api/script-target.ts holds
the same table); the probe checks again because it is the one that applies them.
"""
import inspect
import os
import sys

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
}


class OverrideError(RuntimeError):
    """An override that could not be applied: the run must fail, never go on without it."""


def check(overrides):
    for key, value in overrides.items():
        if key not in KNOWN:
            raise OverrideError("unknown override %r; known keys: %s" % (key, ", ".join(sorted(KNOWN))))
        kind = KNOWN[key][0]
        ok = {
            "int0": isinstance(value, int) and not isinstance(value, bool) and value >= 0,
            "int1": isinstance(value, int) and not isinstance(value, bool) and value >= 1,
            "bool": isinstance(value, bool),
            "precision": value in MATMUL_PRECISIONS,
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


def patch_dataloader_init(DataLoader, overrides, report):
    """Every DataLoader the script creates gets the dataloader.* overrides, or the script stops with why not;
    each reports its settings as made (the wizard's starting point when nothing is overridden)."""
    wanted = loader_overrides(overrides)
    original = DataLoader.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        where = caller_location()
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)  # torch says what is wrong with the call itself
        arguments = bound.arguments
        for name, (key, value) in wanted.items():
            if name not in signature.parameters:
                raise report.override_failed(key, value, where, "this torch's DataLoader has no %r argument" % name)
            if name == "batch_size":
                if arguments.get("batch_sampler") is not None:
                    raise report.override_failed(key, value, where, "the DataLoader takes a batch_sampler, which sets its own batches")
                if "batch_size" in arguments and arguments["batch_size"] is None:
                    raise report.override_failed(key, value, where, "the DataLoader has batch_size=None (no automatic batching)")
            arguments[name] = value
        try:
            original(*bound.args, **bound.kwargs)
        except (ValueError, TypeError) as err:
            keys = ", ".join("%s=%s" % (k, _show(v)) for k, v in wanted.values())
            raise report.override_failed(keys, None, where, "torch refused it: %s" % (err,))
        for name, (key, value) in wanted.items():
            got = getattr(self, name, value)
            if got != value:
                raise report.override_failed(key, value, where, "the DataLoader kept %s=%r" % (name, got))
            report.applied(key, value, where)
        report.loader({name: _plain(getattr(self, name, None)) for name in LOADER_SETTINGS}, where)

    __init__.__wrapped__ = original
    DataLoader.__init__ = __init__


def apply_flags(torch, overrides):
    """torch-wide flags: set as soon as torch is imported; checked again at the first step and at the end."""
    if "cudnn.benchmark" in overrides:
        torch.backends.cudnn.benchmark = overrides["cudnn.benchmark"]
    if "matmul.precision" in overrides:
        if not hasattr(torch, "set_float32_matmul_precision"):
            raise OverrideError("matmul.precision needs torch 1.12 or newer (this is %s)" % torch.__version__)
        torch.set_float32_matmul_precision(overrides["matmul.precision"])


def read_flags(torch, overrides):
    """The flags as they are now, for the keys asked for."""
    out = {}
    if "cudnn.benchmark" in overrides:
        out["cudnn.benchmark"] = bool(torch.backends.cudnn.benchmark)
    if "matmul.precision" in overrides:
        out["matmul.precision"] = torch.get_float32_matmul_precision()
    return out


def _show(value):
    return str(value).lower() if isinstance(value, bool) else str(value)
