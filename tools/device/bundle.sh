#!/usr/bin/env bash
# Packs what a lent GPU machine lacks, so one `run` call can test and benchmark
# there: it has nvcc and PyTorch but no Node. Writes .device/ (ignored by git;
# carry it): node (stripped), the node_modules that vitest (without the Vue
# plugin: vitest.gpu.config.mts), the CLI and bench/gpu need, minus type
# declarations, source maps and docs, the built addon (CUDA for sm_90) and
# dist/. With --fashion-mnist, Debian's Fashion-MNIST too, as xz of the raw
# files. Fails, naming the sizes, when what travels (the repository's files
# and .device/) is over 60 MiB: a call carries at most 64 MiB, and the margin
# is for growth.
#   tools/device/bundle.sh [--fashion-mnist]
set -euo pipefail
cd "$(dirname "$0")/../.."
LIMIT=$((60 * 1024 * 1024))
TB_CUDA_ARCHITECTURES=90 npm run build >/dev/null
rm -rf .device && mkdir -p .device
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Node ships with its symbols (99 MB); stripped it is 86 MB, and xz's x86 filter saves another 4%.
strip -o "$tmp/node" "$(readlink -f "$(command -v node)")"
xz -T0 --x86 --lzma2=preset=9e -c "$tmp/node" > .device/node.xz &
node tools/device/closure.mjs node_modules --without lightningcss vitest zod commander systeminformation ws > .device/modules.txt
# The CLI's reports render charts with ECharts, whose require() entry is one self-contained file
# (3 MB of the package's 62), with the package.json files on its way: the package is an ES module
# and dist/package.json makes that file CommonJS (without it require() returns an empty module).
node -e "
  const path = require('path'), fs = require('fs');
  const entry = require.resolve('echarts'), root = path.resolve('node_modules');
  const out = [path.relative(root, entry)];
  for (let dir = path.dirname(entry); dir.startsWith(root + path.sep + 'echarts'); dir = path.dirname(dir))
    if (fs.existsSync(path.join(dir, 'package.json'))) out.push(path.relative(root, path.join(dir, 'package.json')));
  console.log(out.join('\\n'));
" >> .device/modules.txt
tar -C node_modules --exclude='*.d.ts' --exclude='*.d.mts' --exclude='*.d.cts' --exclude='*.map' --exclude='*.md' \
  -cf - $(cat .device/modules.txt) | xz -T0 -9e > .device/node_modules.tar.xz
tar -cf - build/Release/trainbench_native.node dist/src-main | xz -T0 -9e > .device/build.tar.xz
# The copy on the GPU machine carries a .git from the session's start: the kit names its own commit (run.sh exports it).
git rev-parse HEAD > .device/commit
[[ -z "$(git status --porcelain)" ]] || echo "bundle.sh: the working tree differs from $(git rev-parse --short HEAD): runs on the GPU name that commit all the same" >&2
if [[ "${1:-}" == "--fashion-mnist" ]]; then
  mkdir -p .device/fashion-mnist
  for f in /usr/share/datasets/fashion-mnist/*.gz; do gzip -dc "$f" | xz -T0 -9e > ".device/fashion-mnist/$(basename "$f" .gz).xz"; done
fi
wait
du -sh .device/* | sed 's/^/  /'
kit=$(du -sb .device | cut -f1)
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((kit + tree))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "travels: .device $(mib "$kit") + repository files $(mib "$tree") = $(mib "$total") of at most $(mib "$LIMIT")"
if ((total > LIMIT)); then
  echo "bundle.sh: the kit and the repository come to $(mib "$total"), over the $(mib "$LIMIT") kept for a GPU call (64 MiB at most): carry less" >&2
  exit 1
fi
echo "carry [\".device\"] and run: bash tools/device/run.sh <command> (tools/device/gpu-session.sh runs the whole session)"
