"""Samples in a batch, read from its tensors: the first dimension of the first tensor found.

Batches come as tensors, tuples and lists, dicts, but also as Mappings that are not dicts
(Hugging Face's BatchEncoding is a UserDict), dataclasses, and graph batches that know how
many graphs they hold (PyTorch Geometric's Batch has num_graphs; DGL's batched graph batch_size).
"""
import dataclasses
from collections.abc import Mapping


def batch_size_of(batch, depth=0):
    if depth > 4:
        return None
    if type(batch) is tuple or type(batch) is list:  # the usual (inputs, targets), its tensors read here: this runs at every batch
        for value in batch:
            shape = getattr(value, "shape", None)
            if shape is not None and hasattr(value, "dim"):
                if len(shape) > 0:
                    return int(shape[0])
                continue
            n = batch_size_of(value, depth + 1)
            if n is not None:
                return n
        return None
    shape = getattr(batch, "shape", None)
    if shape is not None and hasattr(batch, "dim"):
        return int(shape[0]) if len(shape) > 0 else None
    graphs = _graph_count(batch)
    if graphs is not None:
        return graphs
    if isinstance(batch, (str, bytes)):
        return None
    if isinstance(batch, Mapping):
        values = batch.values()
    elif isinstance(batch, (list, tuple)):
        values = batch
    elif dataclasses.is_dataclass(batch) and not isinstance(batch, type):
        values = (getattr(batch, f.name, None) for f in dataclasses.fields(batch))
    else:
        return None
    for value in values:
        n = batch_size_of(value, depth + 1)
        if n is not None:
            return n
    return None


def _graph_count(batch):
    """A batch of graphs is as many samples as graphs, not nodes (its first tensor counts nodes)."""
    for name in ("num_graphs", "batch_size"):
        try:
            value = getattr(type(batch), name, None) is not None and getattr(batch, name)
        except Exception:  # a property that needs more than the probe knows
            continue
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None
