"""A training loop that evaluates without no_grad (model.eval() only) every 5 steps and times its own training
steps: what the probe's samples/s must agree with, its evaluation batches not counted as training (issue 38).

    node bin/trainbench.js benchmark-training --warmup-steps 20 --repeat 3 -- python3 bench/script/eval_grad_loop.py

Each launch prints its own figure on stderr ("own training samples/s"), beside the benchmark's per-launch
samples/s; the loop leaves out its first 20 steps as the benchmark does.
"""
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

WARMUP = 20

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train = DataLoader(TensorDataset(torch.randn(128 * 400, 256), torch.randint(0, 10, (128 * 400,))), batch_size=128)
val = DataLoader(TensorDataset(torch.randn(128 * 10, 256), torch.randint(0, 10, (128 * 10,))), batch_size=128)
train_s, samples, step = 0.0, 0, 0
t = time.perf_counter()
for x, y in train:
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    if step > WARMUP:
        train_s += time.perf_counter() - t
        samples += len(x)
    if step % 5 == 0:
        model.eval()
        for vx, vy in val:  # evaluation with grad left on: a common slip
            nn.functional.cross_entropy(model(vx), vy).item()
        model.train()
    t = time.perf_counter()
print("own training samples/s %.1f over %d steps" % (samples / train_s, step - WARMUP), file=sys.stderr)
