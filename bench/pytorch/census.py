"""The census of a training step from torch.profiler's events: how much of the wall
time the device spends in kernels (the union of their intervals, so overlapping
streams count once), the kernels that take the most time, and what is launched per
step, counted on both sides: kernels, copies and memsets the device ran, and the
launch calls the host made (one cudaGraphLaunch stands for a whole captured graph).

The summary works on plain (name, kind, start_us, duration_us) tuples, so it is
checked without a GPU: `python3 bench/pytorch/census.py --self-test`.
"""
import sys

# Host-side CUDA runtime and driver calls that put work on a stream.
KERNEL_LAUNCH_CALLS = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchCooperativeKernel")
GRAPH_LAUNCH_CALLS = ("cudaGraphLaunch", "cuGraphLaunch")
COPY_CALLS = ("cudaMemcpyAsync", "cudaMemcpy", "cudaMemcpy2DAsync", "cuMemcpyAsync", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync")
MEMSET_CALLS = ("cudaMemsetAsync", "cudaMemset", "cuMemsetD8Async", "cuMemsetD32Async")
TOP = 10


def device_kind(name: str) -> str:
    """What a device activity is, by the name the profiler gives it."""
    lower = name.lower()
    if lower.startswith("memcpy"):
        return "copy"
    if lower.startswith("memset"):
        return "memset"
    return "kernel"


def busy_us(intervals) -> float:
    """Length of the union of (start, duration) intervals: time the device had work."""
    total, end = 0.0, None
    for start, duration in sorted(intervals):
        stop = start + duration
        if end is None or start > end:
            total += duration
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def summarize(device_events, host_calls, steps: int, profiled_wall_ms: float, step_ms=None) -> dict:
    """device_events: (name, kind, start_us, duration_us) of what the device ran; host_calls:
    names of the host's runtime calls; both over `steps` steps that took profiled_wall_ms
    under the profiler. step_ms, the step measured without the profiler, is the fairer
    denominator for the busy share (the profiler slows the host, not the kernels)."""
    busy_ms = busy_us([(start, duration) for _, _, start, duration in device_events]) / 1000.0
    counts = {"kernel": 0, "copy": 0, "memset": 0}
    by_name = {}
    for name, kind, _, duration in device_events:
        counts[kind] += 1
        if kind == "kernel":
            entry = by_name.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += duration
    kernel_us = sum(us for _, us in by_name.values()) or 1.0
    top = sorted(by_name.items(), key=lambda item: -item[1][1])[:TOP]

    def per_step(n):
        return n / steps if steps else None

    host = {
        "kernelLaunches": sum(1 for c in host_calls if c in KERNEL_LAUNCH_CALLS),
        "graphLaunches": sum(1 for c in host_calls if c in GRAPH_LAUNCH_CALLS),
        "copies": sum(1 for c in host_calls if c in COPY_CALLS),
        "memsets": sum(1 for c in host_calls if c in MEMSET_CALLS),
    }
    wall_per_step = step_ms if step_ms else profiled_wall_ms / steps
    return {
        "steps": steps,
        "profiledWallMsPerStep": profiled_wall_ms / steps,
        "stepMs": step_ms,
        "kernelBusyMsPerStep": busy_ms / steps,
        "kernelBusyShare": (busy_ms / steps) / wall_per_step if wall_per_step else None,
        "devicePerStep": {k: per_step(v) for k, v in counts.items()} | {"total": per_step(sum(counts.values()))},
        "hostLaunchesPerStep": {k: per_step(v) for k, v in host.items()} | {"total": per_step(sum(host.values()))},
        "topKernels": [
            {"name": name, "msPerStep": us / 1000.0 / steps, "share": us / kernel_us, "callsPerStep": n / steps}
            for name, (n, us) in top
        ],
    }


def from_profiler(prof, steps: int, profiled_wall_ms: float, step_ms=None) -> dict:
    """The summary of a finished torch.profiler.profile (CPU and CUDA activities)."""
    from torch.autograd import DeviceType

    device_events, host_calls = [], []
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            device_events.append((e.name, device_kind(e.name), e.time_range.start, e.time_range.elapsed_us()))
        else:
            host_calls.append(e.name)
    return summarize(device_events, host_calls, steps, profiled_wall_ms, step_ms)


def self_test() -> None:
    # Two overlapping kernels (0-10, 5-15) and one apart (20-30): busy 25 us, not 30.
    events = [("gemm", "kernel", 0.0, 10.0), ("bn", "kernel", 5.0, 10.0), ("gemm", "kernel", 20.0, 10.0),
              ("Memset (Device)", "memset", 40.0, 1.0), ("Memcpy HtoD (Pinned -> Device)", "copy", 50.0, 2.0)]
    assert busy_us([(s, d) for _, _, s, d in events]) == 28.0, busy_us([(s, d) for _, _, s, d in events])
    assert busy_us([(0, 10), (2, 3), (4, 1)]) == 10.0  # nested intervals count once
    assert [device_kind(n) for n, *_ in events] == ["kernel", "kernel", "kernel", "memset", "copy"]
    s = summarize(events, ["cudaLaunchKernel"] * 3 + ["cudaGraphLaunch", "cudaMemsetAsync", "aten::add"], steps=2, profiled_wall_ms=0.1, step_ms=0.05)
    assert s["kernelBusyMsPerStep"] == 0.014, s
    assert abs(s["kernelBusyShare"] - 0.28) < 1e-12, s
    assert s["devicePerStep"] == {"kernel": 1.5, "copy": 0.5, "memset": 0.5, "total": 2.5}, s
    assert s["hostLaunchesPerStep"] == {"kernelLaunches": 1.5, "graphLaunches": 0.5, "copies": 0.0, "memsets": 0.5, "total": 2.5}, s
    assert [k["name"] for k in s["topKernels"]] == ["gemm", "bn"] and s["topKernels"][0]["callsPerStep"] == 1.0, s
    assert abs(s["topKernels"][0]["share"] - 20 / 30) < 1e-12, s
    print("census self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        sys.exit("usage: census.py --self-test (the census itself runs from train_torch.py --census-steps N)")
