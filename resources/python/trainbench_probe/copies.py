"""copy.non_blocking: the script's copies of pinned batches to a CUDA device made asynchronous, with no change to it.

`.to(device)` from pinned (page-locked) host memory can run on the GPU's copy engine while the host goes
on to the next step's Python, but torch waits for it unless asked `non_blocking=True`. Only a pinned
source is changed: from pageable memory the copy is staged and waited for whatever it is asked. A copy
the script asked for explicitly (either way) is left as written. torch's caching host allocator keeps a
pinned block until the copies reading it are done, so the script may drop its batch at once; reads of the
copy on the device are ordered after it on the stream, and `.item()` or `.cpu()` on a result waits for it.
"""
import functools

from .overrides import caller_location


def asks_cuda_copy(torch, args, kwargs):
    """Whether a `Tensor.to(...)` call names a CUDA device and leaves non_blocking to its default.

    Positional non_blocking (`to(device, dtype, True)`, `to(other, True)`, nn.Module.to's form) is the
    caller's choice and is left alone."""
    if "non_blocking" in kwargs or len(args) > 2 or any(isinstance(a, bool) for a in args[1:]):
        return False
    target = kwargs.get("device", args[0] if args else None)
    if target is None or isinstance(target, (bool, torch.dtype)):
        return False
    if isinstance(target, torch.Tensor):
        return target.device.type == "cuda"
    try:
        return torch.device(target).type == "cuda"
    except (TypeError, RuntimeError, ValueError):
        return False


def patch_copies(torch, probe, compiling):
    """Wraps Tensor.to and Tensor.cuda; refused where this torch has no CUDA device to copy to."""
    if not torch.cuda.is_available():
        raise probe.override_failed(
            "copy.non_blocking", True, None, "torch %s sees no CUDA device: a copy within host memory has nothing to overlap" % torch.__version__, made="the script's copies"
        )
    Tensor = torch.Tensor
    state = {"changed": 0}

    def pinned(tensor):
        return tensor.device.type == "cpu" and tensor.is_pinned()

    def changed():
        state["changed"] += 1
        if state["changed"] == 1:
            probe.said_at_first_step({"type": "applied", "key": "copy.non_blocking", "value": True, "where": caller_location()})

    original_to, original_cuda = Tensor.to, Tensor.cuda

    @functools.wraps(original_to)
    def to(self, *args, **kwargs):
        # While dynamo traces (the script's own compiled code), the original is what it must see.
        if not compiling() and asks_cuda_copy(torch, args, kwargs) and pinned(self):
            changed()
            kwargs["non_blocking"] = True
        return original_to(self, *args, **kwargs)

    @functools.wraps(original_cuda)
    def cuda(self, *args, **kwargs):
        if not compiling() and "non_blocking" not in kwargs and len(args) <= 1 and pinned(self):
            changed()
            kwargs["non_blocking"] = True
        return original_cuda(self, *args, **kwargs)

    to._trainbench = cuda._trainbench = True
    Tensor.to, Tensor.cuda = to, cuda
    return lambda: {"type": "copies", "nonBlocking": state["changed"]}
