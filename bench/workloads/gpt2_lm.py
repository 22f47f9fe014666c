"""A GPT-2-small-class language model in a hand-written training loop with gradient accumulation,
written as a beginner writes it: fp32, a DataLoader of token blocks with num_workers=0, AdamW, the
gradient clipped each optimizer step. The tokens are synthesised here (a Zipf-like draw over GPT-2's
vocabulary where every other token follows from the one before), so there is no tokenizer and
nothing to download.

    python gpt2_lm.py [--size tiny|full] [--device auto|cpu|cuda] [--epochs N] [--expert]

--expert runs what a skilled engineer sets by hand: bf16 autocast, torch.compile, fused AdamW,
pinned memory with non-blocking copies, loader workers, and the micro-batch grown as far as the
effective batch allows (fewer accumulation steps, the same recipe, so the learning rate stays).
"""
import argparse
import math
import os

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

# size -> (layers, width, heads, block, vocabulary, tokens, micro-batch, accumulation, expert's micro-batch)
SIZES = {
    "tiny": (2, 64, 2, 64, 4096, 400_000, 8, 4, 32),
    "full": (12, 768, 12, 1024, 50257, 40_000_000, 8, 4, 32),
}


def synthetic_tokens(n, vocab):
    g = torch.Generator().manual_seed(1234)
    ranks = torch.rand(n, generator=g).pow(3).mul(vocab).long().clamp_(max=vocab - 1)
    ranks[1::2] = (ranks[0::2][: len(ranks[1::2])] * 7 + 3) % vocab
    return ranks


class Blocks(Dataset):
    """Consecutive blocks of the token stream: the input and the same block shifted by one."""

    def __init__(self, tokens, block):
        self.tokens, self.block = tokens, block

    def __len__(self):
        return (len(self.tokens) - 1) // self.block

    def __getitem__(self, i):
        chunk = self.tokens[i * self.block : (i + 1) * self.block + 1]
        return chunk[:-1], chunk[1:]


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(approximate="tanh"), nn.Linear(4 * width, width)
        )

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, layers, width, heads, block, vocab):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(block, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2's
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))


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
    layers, width, heads, block, vocab, n, batch, accumulation, expert_batch = SIZES[args.size]
    data = Blocks(synthetic_tokens(n, vocab), block)
    model = GPT(layers, width, heads, block, vocab).to(device)

    if not args.expert:
        loader = DataLoader(data, batch_size=batch, shuffle=True)
        optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
        step = model
    else:
        # The same effective batch in fewer, larger micro-batches: the recipe, and so the learning rate, stays.
        accumulation, batch = max(1, batch * accumulation // expert_batch), expert_batch
        workers = min(4, os.cpu_count() - 1) if cuda else 1
        loader = DataLoader(
            data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers, pin_memory=cuda, persistent_workers=True
        )
        optimizer = torch.optim.AdamW(
            model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True
        )
        step = torch.compile(model, mode=args.compile_mode or ("max-autotune" if cuda else "default"))
        torch.backends.cuda.matmul.allow_tf32 = True

    model.train()
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for i, (x, y) in enumerate(loader):
            if args.expert:
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16):
                    loss = step(x, y) / accumulation
            else:
                x, y = x.to(device), y.to(device)
                loss = step(x, y) / accumulation
            loss.backward()
            if (i + 1) % accumulation == 0:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
            # The expert keeps the running loss on the device: no wait for the GPU at every micro-batch.
            total, count = total + (loss.detach() if args.expert else loss.item()), count + 1
        mean = float(total) * accumulation / count
        print(f"epoch {epoch + 1}: loss {mean:.4f} (uniform: {math.log(vocab):.2f})", flush=True)


if __name__ == "__main__":
    main()
