"""The copy floor of a script (issue 26 item 3): one batch, as the script's loader gave it, copied from pinned host memory.

The layout (shape and dtype of each host tensor in the batch) is read from the first training batch; after the
measured steps the same tensors are made in pinned memory and copied to the training device, timed with CUDA
events on the current stream: the best of 5 after a warm-up. That is the fastest the batch can reach the device,
whatever the script does (pageable memory, blocking copies), so bytes over that rate is a floor per step.
"""
import dataclasses
from collections.abc import Mapping

REPEATS = 5


def batch_layout(torch, batch, depth=0, out=None):
    """[(shape, dtype, on the host)] of every tensor in a batch (tensors, tuples, lists, mappings, dataclasses)."""
    out = [] if out is None else out
    if depth > 4 or len(out) > 256:
        return out
    if isinstance(batch, torch.Tensor):
        out.append((tuple(batch.shape), batch.dtype, batch.device.type == "cpu"))
    elif isinstance(batch, (str, bytes)):
        pass
    elif isinstance(batch, Mapping):
        for value in batch.values():
            batch_layout(torch, value, depth + 1, out)
    elif isinstance(batch, (list, tuple)):
        for value in batch:
            batch_layout(torch, value, depth + 1, out)
    elif dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        for f in dataclasses.fields(batch):
            batch_layout(torch, getattr(batch, f.name, None), depth + 1, out)
    return out


def _nbytes(torch, shape, dtype):
    n = 1
    for d in shape:
        n *= d
    return n * torch.empty((), dtype=dtype).element_size()


def time_batch_copy(torch, layout, device):
    """The 'copy' message: bytes of the batch's host tensors and the best pinned host-to-device copy of them."""
    host = [(shape, dtype) for shape, dtype, on_host in layout if on_host]
    nbytes = sum(_nbytes(torch, shape, dtype) for shape, dtype in host)
    message = {"type": "copy", "bytesPerBatch": nbytes, "tensors": len(host), "seconds": None, "gbPerSec": None}
    if not layout:
        return dict(message, how="not measured: the loader's batches hold no tensor the probe could find")
    if not host:
        return dict(message, how="not measured: the loader's batches are already on %s, nothing to copy" % device)
    sources = [torch.empty(shape, dtype=dtype, pin_memory=True) for shape, dtype in host]
    targets = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in host]
    stream = torch.cuda.current_stream(device)
    best = None
    for i in range(REPEATS + 1):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for src, dst in zip(sources, targets):
            dst.copy_(src, non_blocking=True)
        end.record(stream)
        end.synchronize()
        seconds = start.elapsed_time(end) / 1000
        if i > 0 and (best is None or seconds < best):
            best = seconds
    message.update(seconds=best, gbPerSec=nbytes / best / 1e9 if best > 0 else None)
    message["how"] = "%d tensor(s) of the first training batch, pinned host to %s, CUDA events, best of %d after a warm-up" % (len(host), device, REPEATS)
    return message
