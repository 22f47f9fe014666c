"""A BERT-base-class sequence classifier trained through Hugging Face's Trainer, written as a beginner
writes it: the model built from a BertConfig (no pretrained weights), a WordPiece tokenizer trained
here with `tokenizers`, padding per batch, fp32, dataloader_num_workers=0. The reviews are
synthesised (positive, negative and neutral made-up words; the label is which side has more), so
nothing is downloaded.

    python bert_trainer.py [--size tiny|full] [--device auto|cpu|cuda] [--epochs N] [--expert]

--expert sets in TrainingArguments what a skilled engineer sets by hand: bf16, torch.compile, fused
AdamW, loader workers with pinned memory, padding to one length (one shape for the compiler), and a
larger batch with the learning rate scaled linearly.
"""
import argparse
import os
import random
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import (
    BertConfig, BertForSequenceClassification, DataCollatorWithPadding, PreTrainedTokenizerFast, Trainer, TrainingArguments,
)

# size -> (layers, hidden, heads, longest review in tokens, reviews, batch, expert's batch)
SIZES = {"tiny": (2, 64, 2, 64, 4096, 16, 64), "full": (12, 768, 12, 128, 40_000, 32, 256)}


def synthetic_reviews(n, longest):
    rng = random.Random(1234)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "dor"]
    words = sorted({"".join(rng.choices(syllables, k=rng.randint(2, 4))) for _ in range(3000)})
    good, bad, plain = words[:200], words[200:400], words[400:]
    texts, labels = [], []
    for _ in range(n):
        length = rng.randint(longest // 4, longest - 2)
        n_good, n_bad = rng.randint(0, length // 4), rng.randint(0, length // 4)
        picked = rng.choices(good, k=n_good) + rng.choices(bad, k=n_bad) + rng.choices(plain, k=length - n_good - n_bad)
        rng.shuffle(picked)
        texts.append(" ".join(picked))
        labels.append(int(n_good > n_bad))
    return texts, labels


def train_tokenizer(texts):
    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = {"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}
    raw.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=8000, special_tokens=list(special.values())))
    return PreTrainedTokenizerFast(tokenizer_object=raw, **special)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=SIZES, default="tiny")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--expert", action="store_true")
    parser.add_argument("--compile-mode", help="the expert's torch.compile mode (default: max-autotune on CUDA, default on the CPU)")
    args = parser.parse_args()
    cpu = args.device == "cpu" or (args.device == "auto" and not torch.cuda.is_available())
    layers, hidden, heads, longest, n, batch, expert_batch = SIZES[args.size]
    texts, labels = synthetic_reviews(n, longest)
    tokenizer = train_tokenizer(texts)
    pad = "max_length" if args.expert else False
    encoded = tokenizer(texts, truncation=True, max_length=longest, padding=pad)
    train = [
        {"input_ids": ids, "attention_mask": mask, "labels": label}
        for ids, mask, label in zip(encoded["input_ids"], encoded["attention_mask"], labels)
    ]
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=4 * hidden, max_position_embeddings=512, num_labels=2,
    )
    model = BertForSequenceClassification(config)

    common = dict(
        output_dir=tempfile.mkdtemp(prefix="bert-trainer-"), num_train_epochs=args.epochs, weight_decay=0.01,
        warmup_steps=100, logging_steps=50, save_strategy="no", report_to=[], use_cpu=cpu,
    )
    if not args.expert:
        training = TrainingArguments(**common, per_device_train_batch_size=batch, learning_rate=5e-5)
    else:
        training = TrainingArguments(
            **common,
            per_device_train_batch_size=expert_batch,
            learning_rate=5e-5 * expert_batch / batch,  # the linear rule
            bf16=True,
            torch_compile=True,
            torch_compile_mode=args.compile_mode or ("default" if cpu else "max-autotune"),
            optim="adamw_torch_fused",
            dataloader_num_workers=1 if cpu else min(4, os.cpu_count() - 1),
            dataloader_pin_memory=not cpu,
            dataloader_persistent_workers=True,
        )
    collator = DataCollatorWithPadding(tokenizer)
    trainer = Trainer(model=model, args=training, train_dataset=train, data_collator=collator)
    trainer.train()


if __name__ == "__main__":
    main()
