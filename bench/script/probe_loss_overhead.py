"""What the probe's loss reader costs a real training loop, measured A/B inside one process.

The tutorial fixture's model, data and loop run with Trainbench's whole probe installed
(its channel drained by a local socket); blocks of steps alternate between the loss
reader on and off (its `_off` flag), so load from other processes hits both sides
alike. Prints a table and writes JSON (--out).

    python3 bench/script/probe_loss_overhead.py --blocks 40 --steps 50 [--device cuda] [--out FILE]
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

from collector import drain_server

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=40, help="blocks per side, alternating")
    parser.add_argument("--steps", type=int, default=50, help="optimizer steps per block")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--out")
    args = parser.parse_args()

    os.environ["TB_PROBE_ADDR"] = drain_server()
    os.environ["TB_PROBE_TOKEN"] = "bench"
    sys.path.insert(0, os.path.join(ROOT, "resources", "python"))
    sys.path.insert(0, os.path.join(ROOT, "test", "fixtures", "scripts"))
    import trainbench_probe

    trainbench_probe.install()
    import torch
    from torch import nn
    from torch.utils.data import DataLoader

    from fashion_mnist_tutorial import FashionMNIST, NeuralNetwork

    probe = trainbench_probe._probe
    device = torch.device(args.device)
    loader = DataLoader(FashionMNIST(args.data), batch_size=64, shuffle=True)
    model = NeuralNetwork().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    batches = iter(loader)

    def block(loss_on):
        nonlocal batches
        probe.losses._off = not loss_on
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            try:
                x, y = next(batches)
            except StopIteration:
                batches = iter(loader)
                x, y = next(batches)
            x, y = x.to(device), y.to(device)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000 / args.steps

    for _ in range(4):  # warm-up: allocator, caches, the first flushes
        block(True)
        block(False)
    on, off = [], []
    for i in range(args.blocks):
        # ABBA order, so a drift in load does not favour the side that goes first.
        order = (True, False) if i % 2 == 0 else (False, True)
        for loss_on in order:
            (on if loss_on else off).append(block(loss_on))
    probe.losses._off = False

    ratios = [a / b for a, b in zip(on, off)]
    random.seed(0)
    boots = sorted(statistics.median(random.choices(ratios, k=len(ratios))) for _ in range(5000))
    result = {
        "device": str(device),
        "torch": torch.__version__,
        "blocks": args.blocks,
        "stepsPerBlock": args.steps,
        "msPerStepOn": statistics.median(on),
        "msPerStepOff": statistics.median(off),
        "ratioOnOff": statistics.median(ratios),
        "ratio95": [boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]],
        "loadAverage": os.getloadavg()[0],
    }
    print("loss reader   ms/step (median of %d blocks of %d steps)" % (args.blocks, args.steps))
    print("  on          %.4f" % result["msPerStepOn"])
    print("  off         %.4f" % result["msPerStepOff"])
    print("  on/off      %.4f, 95%% CI [%.4f, %.4f] (paired, bootstrap)" % (result["ratioOnOff"], *result["ratio95"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    os._exit(0)  # the probe's atexit would report a 'done' to the drained socket; nothing to wait for


if __name__ == "__main__":
    main()
