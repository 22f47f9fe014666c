"""optim.impl: which implementation the script's optimizer steps with, set where the script makes it.

torch's optimizers take `foreach=` (one kernel per group of tensors instead of one per tensor) and, in
newer releases, `fused=` (the whole update in one kernel). Each optimizer the script makes reports
its class, the implementations its torch offers and the one it uses; with the override set, the
probe passes it to the constructor (the script's own other choice gives way), torch checks it, and
the run fails with torch's reason where it refuses (an optimizer or a device without that kernel).
"""
import functools
import inspect
import threading

from .overrides import caller_location, outermost_init

IMPLS = ("foreach", "fused")
_local = threading.local()


def _explicit(init):
    """The implementations an __init__ names as parameters, and whether it passes **kwargs on."""
    try:
        params = inspect.signature(init).parameters
    except (TypeError, ValueError):
        return [], False
    return [name for name in IMPLS if name in params], any(p.kind is p.VAR_KEYWORD for p in params.values())


def offers_of(cls, Optimizer):
    """What the class's constructor accepts: its own named parameters, else (through **kwargs) its nearest base's."""
    for klass in cls.__mro__:
        if klass is Optimizer or klass is object:
            return []
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        named, passes_on = _explicit(getattr(init, "__wrapped__", init))
        if named or not passes_on:
            return named
    return []


def current_impl(optimizer):
    groups = getattr(optimizer, "param_groups", None) or [{}]
    if groups[0].get("fused"):
        return "fused"
    return "foreach" if groups[0].get("foreach") else "default"


def patch_optimizer_inits(Optimizer, every_subclass, overrides, report, torch_version):
    wanted = overrides.get("optim.impl")

    def wrap(cls):
        original = cls.__dict__.get("__init__")
        if cls is Optimizer or original is None or getattr(original, "_trainbench_impl", False):
            return

        def _made(self, args, kwargs):
            where = caller_location()
            offers = offers_of(cls, Optimizer)
            if wanted is not None:
                if wanted not in offers:
                    why = "%s takes no %s= argument in torch %s" % (cls.__name__, wanted, torch_version)
                    raise report.override_failed("optim.impl", wanted, where, why, made="the optimizer")
                kwargs = dict(kwargs, **{wanted: True})
                for other in IMPLS:
                    if other != wanted and kwargs.get(other):
                        kwargs[other] = None  # the script's own choice gives way to the override
                try:
                    original(self, *args, **kwargs)
                except (RuntimeError, ValueError, TypeError) as err:
                    raise report.override_failed("optim.impl", wanted, where, "torch refused it: %s" % (err,), made="the optimizer")
                got = current_impl(self)
                if got != wanted:
                    raise report.override_failed("optim.impl", wanted, where, "the optimizer kept %s" % got, made="the optimizer")
                report.applied("optim.impl", wanted, where)
            else:
                original(self, *args, **kwargs)
            report.optimizer({"class": cls.__name__, "offers": offers, "impl": current_impl(self)}, where)

        cls.__init__ = outermost_init(original, _made, _local, "_trainbench_impl")

    every_subclass(Optimizer, wrap)


def patch_zero_grad(torch, overrides, report):
    """optim.set_to_none: zero_grad() drops the gradients instead of writing zeros (torch 2.x's default, not 1.13's).
    The script's first zero_grad() is reported with what it did, so the wizard knows whether there is anything to change."""
    forced = overrides.get("optim.set_to_none") is True
    state = {"seen": False, "applied": False}
    wrapped = []  # (owner, its own zero_grad, the probe's)

    def unwrap():
        """Said, and nothing to force: every later zero_grad() is torch's own again (no wrapper to pay at each step)."""
        for owner, original, ours in wrapped:
            if owner.__dict__.get("zero_grad") is ours:
                owner.zero_grad = original

    def wrap(owner):
        original = owner.__dict__.get("zero_grad")
        if original is None or getattr(original, "_trainbench", False):
            return
        try:
            default = inspect.signature(original).parameters["set_to_none"].default
        except (KeyError, TypeError, ValueError):
            return  # a zero_grad without the argument: nothing to say or to set

        @functools.wraps(original)
        def zero_grad(self, *args, **kwargs):
            if not state["seen"] or (forced and not state["applied"]):
                where = caller_location()
                if not state["seen"]:
                    state["seen"] = True
                    asked = args[0] if args else kwargs.get("set_to_none", default)
                    report.said_at_first_step({"type": "zeroGrad", "setToNone": bool(asked), "where": where})
                if forced:
                    state["applied"] = True
                    report.said_at_first_step({"type": "applied", "key": "optim.set_to_none", "value": True, "where": where})
                else:
                    unwrap()
            if forced:
                args, kwargs = (), dict(kwargs, set_to_none=True)
            return original(self, *args, **kwargs)

        zero_grad._trainbench = True
        owner.zero_grad = zero_grad
        wrapped.append((owner, original, zero_grad))

    wrap(torch.optim.Optimizer)
    wrap(torch.nn.Module)
