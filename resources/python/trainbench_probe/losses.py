"""The training loss, read without a synchronisation per step and without touching the numerics.

The scalar a script passes to backward() is kept: on the CPU its value, read at once (there is
no device to wait for); on a device, the tensor, detached (no graph is held). Every BATCH steps,
or PERIOD_S seconds, the kept values are sent; device scalars are stacked into one small tensor,
copied into pinned host memory with non_blocking and read only once a CUDA event says the copy
is done, so no step ever waits for the GPU. Only the end of the run waits for the last batch.

A CPU loss is not kept as a tensor (issue 38): a detached tensor holds the loss's storage, a
small block allocated amid the step's activations; 32 of them held at a time kept glibc from
reusing the step's large freed blocks, and a 5 ms step's backward wrote into cold memory
(+150 µs a step).
"""
import math
import time

BATCH = 32
PERIOD_S = 0.5


class LossReader:
    def __init__(self, torch, send):
        self._torch = torch
        self._Tensor = torch.Tensor
        self._send = send
        self._steps = []  # steps whose losses were read already (CPU floats), one entry a step ...
        self._values = []  # ... and its summed value
        self._pending = []  # (step, detached scalar): device losses, not yet stacked
        self._inflight = []  # (steps, pinned host tensor, CUDA event): copies under way
        self._last_flush = time.perf_counter()
        self._off = False

    def keep(self, step, tensors):
        """Keeps the loss of a step when it is one floating scalar tensor."""
        scalar = self.scalar_of(tensors)
        if scalar is not None:
            self._add(step, (scalar,))

    def step_closed(self, step, scalars, now):
        """Keeps a closed step's losses that scalar_of returned already (taken at each backward()); starts a batch
        when one is due, reads the batches that finished. One call a step; the usual step (one CPU loss) costs two
        appends, and a batch is sent without a pass over its values in Python (issue 38)."""
        if self._off:
            return
        if scalars:
            if len(scalars) == 1 and type(scalars[0]) is float:
                self._steps.append(step)
                self._values.append(scalars[0])
            else:
                self._add(step, scalars)
        held = len(self._steps) + len(self._pending)
        if held and (held >= BATCH or now - self._last_flush >= PERIOD_S):
            self._flush()
        if self._inflight:
            self._read(wait=False)

    def _add(self, step, scalars):
        """A step's losses: CPU values summed into the step's entry (gradient accumulation), device scalars held."""
        for s in scalars:
            if type(s) is not float:
                self._pending.append((step, s))
            elif self._steps and self._steps[-1] == step:
                self._values[-1] += s
            else:
                self._steps.append(step)
                self._values.append(s)

    def scalar_of(self, tensors):
        """The loss backward() was given: its value (a float) on the CPU, else the detached scalar tensor; None
        when it is not one floating scalar."""
        if self._off:
            return None
        t = tensors[0] if isinstance(tensors, (list, tuple)) and len(tensors) == 1 else tensors
        try:
            if not isinstance(t, self._Tensor):
                return None
            if t.is_cpu:
                # item() itself tells what is not one floating scalar (it raises for other than one element, and
                # gives an int, a bool or a complex for other dtypes): two tensor calls fewer a step (issue 38).
                try:
                    value = t.item()
                except (RuntimeError, ValueError):  # several elements: torch 2.x raises the one, 1.13 the other
                    return None
                return value if type(value) is float else None
            if t.is_floating_point() and t.numel() == 1:
                d = t.detach()
                return d if d.dim() == 0 else d.reshape(())  # a 0-d loss (the usual) needs no second tensor op
        except Exception as err:  # never let the probe break a backward()
            self._stop(err)
        return None

    def finish(self):
        """At the end of the run: the last batch, waiting for its copy."""
        if self._off:
            return
        if self._pending or self._steps:
            self._flush()
        self._read(wait=True)

    def _flush(self):
        self._last_flush = time.perf_counter()
        if self._steps:
            steps, values = self._steps, self._values
            self._steps, self._values = [], []
            self._send_values(steps, values)
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        torch = self._torch
        try:
            cuda = torch.cuda
            first = pending[0][1]
            capturing = getattr(cuda, "is_current_stream_capturing", None)  # torch >= 1.10
            if first.is_cuda and capturing is not None and capturing():
                return  # inside a CUDA graph capture: no new work may be enqueued; these values are dropped
            values = torch.stack([t for _, t in pending]).float()
            steps = [s for s, _ in pending]
            if values.is_cuda:
                host = torch.empty(values.shape, dtype=values.dtype, pin_memory=True)
                host.copy_(values, non_blocking=True)
                done = cuda.Event()
                done.record()
                self._inflight.append((steps, host, done))
            else:
                self._emit(steps, values.tolist())
        except Exception as err:  # a loss on mixed devices, an exotic tensor: the loss curve stops, training goes on
            self._stop(err)

    def _stop(self, err):
        self._off = True
        self._steps, self._values = [], []
        self._pending = []
        self._inflight = []
        self._send({"type": "lossOff", "reason": repr(err)[:500]})

    def _read(self, wait):
        keep = []
        for steps, host, done in self._inflight:
            if wait:
                done.synchronize()
            if done.query():
                self._emit(steps, host.tolist())
            else:
                keep.append((steps, host, done))
        self._inflight = keep

    def _emit(self, steps, values):
        """Device values as read back: one value per step, the sum of the step's backward() losses (gradient
        accumulation scales them to add up)."""
        per_step = {}
        for step, value in zip(steps, values):
            per_step[step] = per_step.get(step, 0.0) + value
        ordered = sorted(per_step.items())
        self._send_values([s for s, _ in ordered], [v for _, v in ordered])

    def _send_values(self, steps, values):
        # JSON has no NaN or infinity: a diverged loss is sent as null, which the chart shows as a gap. One sum finds
        # out whether any is (a NaN or an infinity makes it non-finite; so may a sum too large, which costs a pass).
        if not math.isfinite(sum(values)):
            values = [v if math.isfinite(v) else None for v in values]
        self._send({"type": "loss", "steps": steps, "values": values})
