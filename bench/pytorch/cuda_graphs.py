"""Whether torch.compile's CUDA graphs were really used. Inductor falls back to running
a graph's kernels one by one, without an error, when it cannot capture it (an input
mutated in place that is not a parameter or buffer, a CPU tensor in the graph, too
many re-recordings): it logs the reason on the `cudagraphs` artifact logger, which is
quiet unless TORCH_LOGS=cudagraphs, and bumps counters["inductor"]["cudagraph_skips"].
The watch collects both and counts the graphs the cudagraph-tree manager recorded
(torch/_inductor/cudagraph_utils.py and cudagraph_trees.py, torch 2.x)."""
import logging


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.reasons = []

    def emit(self, record):
        message = record.getMessage().strip()
        if message not in self.reasons:
            self.reasons.append(message)


class CudaGraphWatch:
    """Start before the first compiled call; report() after the timed steps."""

    def __init__(self, device, compiled: bool, compile_unavailable=None):
        self.device, self.compiled, self.compile_unavailable = device, compiled, compile_unavailable
        self.handler, self.logger, self.skips_before = None, None, 0
        if not self._possible():
            return
        from torch._dynamo.utils import counters
        from torch._inductor import cudagraph_utils

        # The artifact logger as torch._logging names it, should a release not export it under this name.
        self.logger = getattr(cudagraph_utils, "cudagraphs_log", None) or logging.getLogger(f"{cudagraph_utils.__name__}.__cudagraphs")
        self.handler = _Collect()
        self.logger.addHandler(self.handler)
        if self.logger.getEffectiveLevel() > logging.WARNING:
            self.logger.setLevel(logging.WARNING)
        self.skips_before = counters["inductor"]["cudagraph_skips"]

    def _possible(self) -> bool:
        return self.device.type == "cuda" and self.compiled and self.compile_unavailable is None

    def recorded_graphs(self) -> int:
        """CUDA graphs the cudagraph-tree manager of this device recorded, all trees."""
        from torch._inductor import cudagraph_trees

        manager = cudagraph_trees.get_manager(self.device.index or 0, create_if_none_exists=False)
        if manager is None:
            return 0
        count, pending = 0, [node for nodes in manager.roots.values() for node in nodes]
        while pending:
            node = pending.pop()
            count += 1
            pending.extend(child for children in node.children.values() for child in children)
        return count

    def report(self) -> dict:
        """{used, skipped: reason or null, graphs, skips}: used when at least one graph was
        recorded; skipped names every reason logged (graphs may be used for part of the step
        and skipped for another part) or why no graph could be used at all."""
        if self.device.type != "cuda":
            return {"used": False, "skipped": f"{self.device.type}: CUDA graphs exist only on a CUDA device", "graphs": 0, "skips": 0}
        if self.compile_unavailable is not None:
            return {"used": False, "skipped": f"no torch.compile: {self.compile_unavailable}", "graphs": 0, "skips": 0}
        if not self.compiled:
            return {"used": False, "skipped": "eager: no torch.compile, so nothing captures CUDA graphs", "graphs": 0, "skips": 0}
        from torch._dynamo.utils import counters

        self.logger.removeHandler(self.handler)
        skips = counters["inductor"]["cudagraph_skips"] - self.skips_before
        try:
            graphs = self.recorded_graphs()
        except Exception as err:  # an inductor whose manager looks different: say so rather than guess
            graphs, self.handler.reasons = 0, self.handler.reasons + [f"could not count recorded graphs: {err!r}"]
        reasons = list(self.handler.reasons)
        if skips and not reasons:
            reasons.append(f"{skips} skip(s) counted by inductor without a logged reason")
        if not graphs and not reasons:
            reasons.append("no CUDA graph was recorded and inductor logged no reason (is cudagraphs off in this compile mode?)")
        return {"used": graphs > 0, "skipped": "; ".join(reasons) if reasons else None, "graphs": graphs, "skips": skips}


def self_test() -> None:
    """The watch's reading of inductor, checked without a GPU: a skip logged the way inductor logs
    it is reported with its reason; recorded graphs without skips read as used, with none skipped."""
    import torch
    from torch._inductor.cudagraph_utils import log_cudagraph_skip_and_bump_counter

    cuda = torch.device("cuda", 0)
    watch = CudaGraphWatch(cuda, compiled=True)
    watch.recorded_graphs = lambda: 0
    log_cudagraph_skip_and_bump_counter("skipping cudagraphs due to mutated inputs (2 instances)")
    report = watch.report()
    assert report == {"used": False, "skipped": "skipping cudagraphs due to mutated inputs (2 instances)", "graphs": 0, "skips": 1}, report
    watch = CudaGraphWatch(cuda, compiled=True)
    watch.recorded_graphs = lambda: 3
    assert watch.report() == {"used": True, "skipped": None, "graphs": 3, "skips": 0}
    watch = CudaGraphWatch(cuda, compiled=True)
    watch.recorded_graphs = lambda: 0
    assert watch.report()["skipped"].startswith("no CUDA graph was recorded")
    # Without a GPU the manager was never made: nothing recorded, no error.
    assert CudaGraphWatch(cuda, compiled=True).recorded_graphs() == 0
    assert CudaGraphWatch(torch.device("cpu"), compiled=True).report()["skipped"].startswith("cpu:")
    print("cuda_graphs self-test passed")


if __name__ == "__main__":
    self_test()
