"""DistributedDataParallel's own settings (issue 40): read where the script makes its DDP model, and the ddp.*
overrides applied there, so the wizard can try bigger gradient buckets, gradients as views of the buckets and a
static graph on a job of several ranks, each measured on the whole job.

Every rank makes its DDP model with the same arguments, so every rank applies the same overrides; rank 0's message
speaks for the job.
"""
import inspect
import threading

from .overrides import caller_location, outermost_init

# override key -> DistributedDataParallel's argument
SETTINGS = {
    "ddp.bucket_cap_mb": "bucket_cap_mb",
    "ddp.gradient_as_bucket_view": "gradient_as_bucket_view",
    "ddp.static_graph": "static_graph",
}
# DDP's own bucket size when the script passes none (torch 2.x's default is None, meaning this).
DEFAULT_BUCKET_CAP_MB = 25

_local = threading.local()


def _settings(bound, parameters):
    """The three settings as DDP gets them: the argument where it is passed, DDP's default where not."""

    def value(arg):
        if arg in bound.arguments:
            return bound.arguments[arg]
        p = parameters.get(arg)
        return None if p is None or p.default is inspect.Parameter.empty else p.default

    cap = value("bucket_cap_mb")
    return {
        "bucketCapMb": DEFAULT_BUCKET_CAP_MB if cap is None else float(cap),
        "gradientAsBucketView": bool(value("gradient_as_bucket_view")),
        "staticGraph": bool(value("static_graph")),
    }


def patch_ddp_init(torch, overrides, report):
    """Wraps DistributedDataParallel.__init__: says the script's own settings once, applies the asked ones to every
    DDP model. A torch without distributed support has no DDP: an asked override then fails the launch."""
    asked = {key: overrides[key] for key in SETTINGS if key in overrides}
    try:
        DDP = torch.nn.parallel.DistributedDataParallel
    except Exception as err:
        if asked:
            key = sorted(asked)[0]
            raise report.override_failed(key, asked[key], None, "this torch has no DistributedDataParallel (%s)" % (err,), made="DistributedDataParallel")
        return
    original = DDP.__dict__["__init__"]
    if getattr(original, "_trainbench_ddp", False):
        return
    signature = inspect.signature(original)
    for key in asked:
        if SETTINGS[key] not in signature.parameters:
            raise report.override_failed(key, asked[key], None, "this torch's DistributedDataParallel takes no %s= argument" % SETTINGS[key], made="DistributedDataParallel")
    said = []

    def _made(self, args, kwargs):
        where = caller_location()
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:  # arguments DDP itself will refuse: let it say so
            return original(self, *args, **kwargs)
        own = _settings(bound, signature.parameters)
        for key, value in asked.items():
            bound.arguments[SETTINGS[key]] = value
        try:
            original(*bound.args, **bound.kwargs)
        except (RuntimeError, ValueError, TypeError) as err:
            if not asked:
                raise
            shown = ", ".join("%s=%s" % (k, v) for k, v in sorted(asked.items()))
            raise report.override_failed(shown, None, where, "torch refused it: %s" % (err,), made="DistributedDataParallel")
        for key, value in asked.items():
            report.said_at_first_step({"type": "applied", "key": key, "value": value, "where": where})
        if not said:  # the first DDP model: the one the wizard's knobs speak of
            said.append(True)
            report.said_at_first_step(dict(own, type="ddp", where=where))

    DDP.__init__ = outermost_init(original, _made, _local, "_trainbench_ddp")
