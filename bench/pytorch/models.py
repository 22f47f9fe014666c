"""The engine's built-in models in PyTorch, layer for layer (native/src/nn/model.cpp):
same shapes, same initialisation scheme (He-normal weights, zero biases, BN as
identity), same losses. Specs are the engine's JSON specs with defaults filled."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def _he_init(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_in))
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


def _dense_layers(width: int, hidden, dropout: float, outputs: int) -> list:
    """Linear + ReLU (+ dropout) per hidden width, then the output layer, as the engine builds them."""
    layers = []
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        width = h
    return layers + [nn.Linear(width, outputs)]


class Mlp(nn.Module):
    def __init__(self, spec: dict):
        super().__init__()
        dense = _dense_layers(math.prod(spec["input"]), spec.get("hidden", [256, 128]), spec.get("dropout", 0), spec["outputs"])
        self.net = nn.Sequential(nn.Flatten(), *dense)
        _he_init(self)

    def forward(self, x):
        return (self.net(x),)


class Cnn(nn.Module):
    def __init__(self, spec: dict):
        super().__init__()
        c, h, w = spec["input"]
        k, bn = spec.get("kernel", 3), spec.get("batchNorm", True)
        layers = []
        for out_c, stride in zip(spec.get("channels", [32, 64, 64]), spec.get("strides", [1, 2, 2])):
            layers.append(nn.Conv2d(c, out_c, k, stride, k // 2, bias=not bn))
            if bn:
                layers.append(nn.BatchNorm2d(out_c))
            layers.append(nn.ReLU())
            h, w, c = (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1, out_c
        hidden = spec.get("hidden", 128)
        dense = _dense_layers(c * h * w, [hidden] if hidden else [], spec.get("dropout", 0), spec["outputs"])
        self.net = nn.Sequential(*layers, nn.Flatten(), *dense)
        _he_init(self)

    def forward(self, x):
        return (self.net(x),)


class Bottleneck(nn.Module):
    def __init__(self, in_c: int, width: int, out_c: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(in_c, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out_c, 1, bias=False), nn.BatchNorm2d(out_c)
        self.shortcut = None
        if stride != 1 or in_c != out_c:
            self.shortcut = nn.Sequential(nn.Conv2d(in_c, out_c, 1, stride, bias=False), nn.BatchNorm2d(out_c))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class BoardNet(nn.Module):
    """bottleneck_resnet: the shogi policy/value network."""

    def __init__(self, spec: dict):
        super().__init__()
        in_c = spec.get("input", [104, 9, 9])[0]
        stem = spec.get("stemWidth", 24)
        self.stem = nn.Sequential(nn.Conv2d(in_c, stem, 3, 1, 1, bias=False), nn.BatchNorm2d(stem), nn.ReLU())
        blocks, c = [], stem
        for n, stride, width in zip(spec.get("layers", [2, 2, 2, 1]), spec.get("strides", [1, 2, 2, 2]), spec.get("widths", [24, 48, 96, 144])):
            for b in range(n):
                out_c = width * spec.get("expansion", 4)
                blocks.append(Bottleneck(c, width, out_c, stride if b == 0 else 1))
                c = out_c
        self.stages = nn.Sequential(*blocks)
        head = spec.get("headChannels", 128)
        self.policy_conv, self.policy_fc = nn.Conv2d(c, head, 3, 1, 1), nn.Linear(head, spec.get("policyClasses", 1496))
        self.value_conv, self.value_fc = nn.Conv2d(c, head, 3, 1, 1), nn.Linear(head, 1)
        _he_init(self)

    def forward(self, x):
        t = self.stages(self.stem(x))
        p = self.policy_fc(F.relu(self.policy_conv(t)).mean((2, 3)))
        v = self.value_fc(F.relu(self.value_conv(t)).mean((2, 3)))
        return p, v.squeeze(1)


def build(spec: dict) -> nn.Module:
    return {"mlp": Mlp, "cnn": Cnn, "bottleneck_resnet": BoardNet}[spec["family"]](spec)


def loss_fn(spec: dict, outputs, batch):
    """The engine's losses: CE on labels; soft-target CE (policy) + BCE on logits (value) for the board."""
    if spec["family"] != "bottleneck_resnet":
        return F.cross_entropy(outputs[0].float(), batch["y"].long())
    p, v = outputs
    target = batch["policy"].float()
    soft_ce = -(target * F.log_softmax(p.float(), dim=1)).sum(1).mean()
    return soft_ce + F.binary_cross_entropy_with_logits(v.float(), batch["value"].float())
