"""A ResNet-18 on CIFAR-sized (3x32x32) images, written as a beginner writes it: fp32, the augmentation
(random crop with padding, horizontal flip, normalisation) done per image in the Dataset on the CPU,
a DataLoader with num_workers=0, SGD with momentum. The images are synthesised here (each class a
colour pattern plus noise), so nothing is downloaded.

    python resnet_cifar.py [--size tiny|full] [--device auto|cpu|cuda] [--epochs N] [--expert]

--expert runs what a skilled engineer sets by hand: bf16 autocast, channels_last, torch.compile,
fused SGD, pinned memory with non-blocking copies, loader workers, and a larger batch with the
learning rate scaled linearly.
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

# size -> (images, blocks per stage, width of the first stage, batch, expert's batch)
SIZES = {"tiny": (4096, [1, 1, 1, 1], 16, 64, 256), "full": (50000, [2, 2, 2, 2], 64, 128, 1024)}
MEAN, STD = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1), torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)


def synthetic_images(n, classes=10):
    """uint8 images (n, 3, 32, 32): each class a smooth colour pattern, each image that pattern plus noise."""
    g = torch.Generator().manual_seed(1234)
    patterns = F.interpolate(torch.rand(classes, 3, 4, 4, generator=g), size=32, mode="bilinear", align_corners=False)
    labels = torch.randint(0, classes, (n,), generator=g)
    images = patterns[labels] * 200 + torch.rand(n, 3, 32, 32, generator=g) * 55
    return images.to(torch.uint8), labels


class AugmentedImages(Dataset):
    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i].float() / 255
        x = F.pad(x, (4, 4, 4, 4), mode="reflect")
        top, left = torch.randint(0, 9, (2,)).tolist()
        x = x[:, top : top + 32, left : left + 32]
        if torch.rand(1).item() < 0.5:
            x = x.flip(2)
        return (x - MEAN) / STD, int(self.labels[i])


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 as CIFAR code writes it: a 3x3 stem without max-pooling, four stages, global pooling."""

    def __init__(self, blocks, width, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, cin = [], width
        for stage, n in enumerate(blocks):
            cout = width * 2**stage
            for k in range(n):
                layers.append(BasicBlock(cin, cout, 2 if stage > 0 and k == 0 else 1))
                cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=SIZES, default="tiny")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--expert", action="store_true")
    parser.add_argument("--compile-mode", help="the expert's torch.compile mode (default: max-autotune on CUDA, default on the CPU)")
    args = parser.parse_args()
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    cuda = device.startswith("cuda")
    n, blocks, width, batch, expert_batch = SIZES[args.size]
    images, labels = synthetic_images(n)
    model = ResNet18(blocks, width).to(device)
    lr = 0.1

    if not args.expert:
        loader = DataLoader(AugmentedImages(images, labels), batch_size=batch, shuffle=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
        step = model
    else:
        workers = min(8, os.cpu_count() - 1) if cuda else 1
        loader = DataLoader(
            AugmentedImages(images, labels), batch_size=expert_batch, shuffle=True, drop_last=True,
            num_workers=workers, pin_memory=cuda, persistent_workers=True, prefetch_factor=4,
        )
        model = model.to(memory_format=torch.channels_last)
        # The linear rule: the learning rate grows with the batch.
        optimizer = torch.optim.SGD(
            model.parameters(), lr=lr * expert_batch / batch, momentum=0.9, weight_decay=5e-4, fused=True
        )
        step = torch.compile(model, mode=args.compile_mode or ("max-autotune" if cuda else "default"))
        torch.backends.cudnn.benchmark = True
    loss_fn = nn.CrossEntropyLoss()

    model.train()
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for x, y in loader:
            if args.expert:
                x = x.to(device, non_blocking=True, memory_format=torch.channels_last)
                y = y.to(device, non_blocking=True)
                with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16):
                    loss = loss_fn(step(x), y)
            else:
                x, y = x.to(device), y.to(device)
                loss = loss_fn(step(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            # The expert keeps the running loss on the device: no wait for the GPU at every step.
            total, count = total + (loss.detach() if args.expert else loss.item()), count + 1
        print(f"epoch {epoch + 1}: loss {float(total) / count:.4f}", flush=True)


if __name__ == "__main__":
    main()
