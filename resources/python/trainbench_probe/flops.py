"""Model FLOPs of the script's training forward, counted once, for the utilisation estimate.

Forward hooks on the Linear and Conv layers of the models the optimizers train, for one training
iteration (the first: a warm-up step unless --warmup-steps is 0), then removed, so the measured steps
pay nothing. A multiply-add is 2 FLOPs: a Linear's output element costs in_features of them, a
convolution's (in_channels / groups) x the kernel's size. Attention, matmuls outside Linear layers
and elementwise work are not counted: the figure is an estimate, and says so. Under torch.compile
nothing is counted: hooks added and removed around compiled code would make it recompile.

Activation checkpointing: the layers inside a reentrant checkpoint run their forward under no_grad,
and are the training forward all the same (counted); the forward a checkpoint runs again inside the
backward is extra work, counted apart (recomputePerSample), not in the model's FLOPs.
"""
import math
import time


class FlopCounter:
    METHOD = "forward hooks on Linear and Conv layers (attention, bare matmuls and elementwise work not counted)"

    def __init__(self, torch, probe):
        self.torch = torch
        self.probe = probe
        self.kinds = tuple(k for k in (getattr(torch.nn, n, None) for n in ("Linear", "Conv1d", "Conv2d", "Conv3d")) if k is not None)
        self.handles = []
        self.hooked = set()
        self.flops = 0
        self.layers = set()
        self.done = False
        self.counted = False
        self.at_step = None  # the count at the first optimizer step
        self.recompute = 0  # forwards run again inside the backward (activation checkpointing)
        self.recompute_at_step = 0
        self._checkpoint_patch = None
        # A plain function marked as the probe's: torch.save(model) leaves it out (modules.py's __getstate__).
        count = lambda module, args, output: self._count(module, output)  # noqa: E731
        count._trainbench_hook = True
        self.hook = count

    def roots_found(self, roots):
        """Hooks every Linear and Conv layer of newly found models, until the first counted iteration closes."""
        if self.done or self.at_step is not None:
            return
        if self.probe.dynamo_kept_out:
            self.abandon()
            return
        self._patch_checkpoint()
        for root in roots:
            for m in root.modules():
                if isinstance(m, self.kinds) and id(m) not in self.hooked:
                    self.hooked.add(id(m))
                    self.handles.append(m.register_forward_hook(self.hook))

    def _patch_checkpoint(self):
        """Marks the forward of a reentrant checkpoint (run under no_grad) as training, until the count is done."""
        if self._checkpoint_patch is not None or self.done or self.at_step is not None:
            return
        try:
            from torch.utils import checkpoint
        except ImportError:
            return
        fn = getattr(checkpoint, "CheckpointFunction", None)
        if fn is None or "forward" not in fn.__dict__:
            return
        original = fn.__dict__["forward"]
        inner = original.__func__ if isinstance(original, staticmethod) else original
        local = self.probe.threads.state

        def forward(ctx, *args):
            local.checkpoint_forward += 1
            try:
                return inner(ctx, *args)
            finally:
                local.checkpoint_forward -= 1

        fn.forward = staticmethod(forward)
        self._checkpoint_patch = (fn, original)

    def _count(self, module, output):
        probe = self.probe
        if probe._compiling() or not module.training or probe.threads.state.in_fetch:
            return None  # traced by dynamo, or inside a loader fetch
        grad = self.torch.is_grad_enabled()
        if probe.backward_depth > 0:
            recompute = True  # a checkpoint's forward run again to give the backward its activations
            if not grad:
                return None
        elif grad or probe.threads.state.checkpoint_forward > 0:
            recompute = False
        else:
            return None  # an evaluation
        numel = getattr(output, "numel", None)
        if numel is None:
            return None
        if isinstance(module, self.torch.nn.Linear):
            per_output = module.in_features
        else:
            per_output = (module.in_channels // module.groups) * math.prod(module.kernel_size)
        if recompute:
            self.recompute += 2 * per_output * numel()
            return None
        self.flops += 2 * per_output * numel()
        self.layers.add(id(module))
        return None

    def optimizer_stepped(self):
        """The first optimizer step after a counted forward ends the count: an iteration closes only when the next
        one has begun, by which time its forward has run too."""
        if self.flops and self.at_step is None:
            self.at_step = self.flops
            self.recompute_at_step = self.recompute
            self._remove()

    def abandon(self):
        """torch.compile is in use: no hook of ours may be there when dynamo traces (removing one later recompiles)."""
        if self.done:
            return
        self._remove()
        self.done = True
        self.probe.send({"type": "flops", "step": max(1, self.probe.steps + 1), "forwardPerSample": None, "layers": 0, "method": "not counted: the script uses torch.compile"})

    def iteration_closed(self, number, samples):
        """After the first iteration that ran a training forward: the count per sample, sent once."""
        if self.done or not self.hooked:
            return
        if self.probe.dynamo_kept_out:
            self.abandon()
            return
        if self.at_step is None or not samples:
            return  # no training step yet (a data-only iteration)
        self.done = True
        self.counted = True
        self.probe.send(
            {"type": "flops", "step": number, "forwardPerSample": self.at_step / samples, "recomputePerSample": self.recompute_at_step / samples, "layers": len(self.layers), "method": self.METHOD}
        )

    def _remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []
        if self._checkpoint_patch is not None:
            fn, original = self._checkpoint_patch
            fn.forward = original
            self._checkpoint_patch = False  # not patched again


def fp32_matmul_precision(torch, cuda):
    """The precision torch multiplies fp32 matrices in now: 'tf32' where CUDA may use TensorFloat-32 (matmul.precision
    high or medium, allow_tf32, the fp32_precision API of torch 2.9+), else 'fp32'. A CPU has no TF32."""
    if not cuda:
        return "fp32"
    matmul = torch.backends.cuda.matmul
    try:
        # torch 2.9+: after the new API is used the legacy flag raises, so the new one is read first; 'none' defers to torch-wide.
        mode = matmul.fp32_precision
        if mode == "none":
            mode = getattr(torch.backends, "fp32_precision", "ieee")
        return "tf32" if mode == "tf32" else "fp32"
    except (AttributeError, AssertionError, RuntimeError):  # torch < 2.9 (1.x's backends.cuda.matmul asserts on a name it lacks)
        return "tf32" if getattr(matmul, "allow_tf32", False) else "fp32"


def matmul_peak(torch, device):
    """torch's own best matrix-multiply rate on the training device now, on fp32 tensors, in the precision torch uses
    for them (TF32 where the script or an override allows it): the utilisation's denominator for a script (its
    arithmetic runs on torch's kernels, not Trainbench's engine). Best of 5 after one warm-up."""
    cuda = device is not None and str(device).startswith("cuda")
    n = 4096 if cuda else 512
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    best = None
    for i in range(6):
        if cuda:
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        torch.mm(a, b)
        if cuda:
            torch.cuda.synchronize(device)
        dt = time.perf_counter() - t0
        if i > 0 and (best is None or dt < best):
            best = dt
    threads = "" if cuda else " on %d thread%s" % (torch.get_num_threads(), "" if torch.get_num_threads() == 1 else "s")
    precision = fp32_matmul_precision(torch, cuda)
    return {"type": "peak", "gflops": 2 * n ** 3 / best / 1e9, "shape": "%d^3 %s" % (n, precision), "precision": precision, "how": "torch.mm on %s%s, best of 5" % (device or "cpu", threads)}
