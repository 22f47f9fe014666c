"""Samples in a batch, read from its tensors: the first dimension of the first tensor found."""


def batch_size_of(batch, depth=0):
    if depth > 4:
        return None
    shape = getattr(batch, "shape", None)
    if shape is not None and hasattr(batch, "dim"):
        return int(shape[0]) if len(shape) > 0 else None
    if isinstance(batch, dict):
        values = batch.values()
    elif isinstance(batch, (list, tuple)):
        values = batch
    else:
        return None
    for value in values:
        n = batch_size_of(value, depth + 1)
        if n is not None:
            return n
    return None
