#!/usr/bin/env bash
# Hugging Face's Trainer on the tests' first PyTorch, Debian's python3-torch 1.13 (issue 38: the evaluation forms
# on both torches). Current transformers needs torch >= 2.5, so this is the last line that runs on 1.13, in a
# virtual environment over Debian's site-packages (its torch, numpy, yaml, requests, psutil). Installed without
# dependencies, each pinned here: pip's resolver does not take Debian's "1.13.0a0" as a torch and would pull a
# multi-GB CUDA build. Lightning is not here: LightningModule imports torch.distributed._shard, which torch 1.13
# cannot import on Python 3.11 (a dataclass with a mutable default). Idempotent, like scripts/ci-torch2.sh.
# Usage: scripts/ci-torch1-clients.sh [venv folder]   (the tests look in .venv-torch1-clients, a link to it)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-${TB_TORCH1_CLIENTS_VENV:-$HOME/.cache/trainbench/venv-torch1-clients}}"
pins=(
  "transformers==4.46.3"
  "tokenizers==0.20.3"
  "huggingface-hub==0.26.5"
  "safetensors==0.4.5"
  "accelerate==1.1.1"
  "fsspec==2024.10.0"
  "tqdm==4.67.1"
  "regex==2024.11.6"
  "packaging==24.2"
  "filelock==3.16.1"
)
python="$venv/bin/python"
if ! { [ -x "$python" ] && "$python" - "${pins[@]}" <<'PY' 2>/dev/null; }; then
import sys
from importlib.metadata import version
for line in sys.argv[1:]:
    name, pinned = line.split("==")
    assert version(name) == pinned, (name, version(name), pinned)
PY
  if ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends python3-venv
  fi
  mkdir -p "$(dirname "$venv")"
  [ -x "$python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$python" -m pip install -q --no-deps "${pins[@]}" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
fi
[ -e .venv-torch1-clients ] || [ -L .venv-torch1-clients ] || ln -s "$(cd "$venv" && pwd)" .venv-torch1-clients
"$python" -c 'import torch, transformers, accelerate; print("ci-torch1-clients: torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__)'
