#!/usr/bin/env bash
# The script probe's second PyTorch (issue 30): a virtual environment with the CPU build of torch 2.13
# and the real clients the probe is tested under (Hugging Face transformers + accelerate, Lightning,
# torchdata's StatefulDataLoader), pinned. Idempotent: when the environment already holds these
# versions it only checks them (about a second).
# Usage: scripts/ci-torch2.sh [venv folder]
# The environment lives outside the checkout (default ~/.cache/trainbench/venv-torch2, kept between
# runs), because `eslint .` would lint the JavaScript inside site-packages; .venv-torch2 in the
# checkout is a link to it (eslint does not follow links), where the tests look by default
# (TB_TORCH2_PYTHON names another python).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-${TB_TORCH2_VENV:-$HOME/.cache/trainbench/venv-torch2}}"
link_in_checkout() {
  if [ ! -e .venv-torch2 ] && [ ! -L .venv-torch2 ]; then
    ln -s "$(cd "$venv" && pwd)" .venv-torch2
  fi
}
# torch is pinned to the CPU wheel (+cpu), which this kind of machine keeps on its disk (pip's find-links):
# never an unpinned torch, whose default Linux build pulls several GB of CUDA libraries.
pins=(
  "torch==2.13.0+cpu"
  "numpy==2.2.6"
  "transformers==5.17.0"
  "tokenizers==0.23.2"
  "accelerate==1.15.0"
  "lightning==2.6.6"
  "torchdata==0.11.0"
)
python="$venv/bin/python"
want="$(printf '%s\n' "${pins[@]}")"
if [ -x "$python" ] && "$python" - "$want" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in sys.argv[1].split():
    name, pinned = line.split("==")
    assert version(name) == pinned, (name, version(name), pinned)
PY
then
  link_in_checkout
  echo "ci-torch2: $venv has ${pins[*]}"
  exit 0
fi
base=""
for candidate in python3.11 /usr/bin/python3.11; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
    base="$(command -v "$candidate")"
    break
  fi
done
[ -n "$base" ] || { echo "ci-torch2: no python3.11 (torch 2.13's CPU wheel here is for 3.11)" >&2; exit 1; }
if ! "$base" -c 'import ensurepip' 2>/dev/null; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends python3.11-venv
fi
mkdir -p "$(dirname "$venv")"
[ -x "$python" ] || "$base" -m venv "$venv"
# (pip names each local index folder it skips; those lines are noise.)
"$python" -m pip install -q --upgrade-strategy only-if-needed "${pins[@]}" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
"$python" -c 'import torch, transformers, accelerate, lightning; print("ci-torch2: torch", torch.__version__, "transformers", transformers.__version__, "accelerate", accelerate.__version__, "lightning", lightning.__version__)'
link_in_checkout
