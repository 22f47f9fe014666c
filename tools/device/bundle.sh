#!/usr/bin/env bash
# Packs what a lent GPU machine lacks, so one `run` call can test and benchmark
# there: it has nvcc and PyTorch but no Node. Writes .device/ (ignored by git;
# carry it): node, the node_modules that vitest, the CLI and bench/gpu need,
# the built addon (CUDA for sm_90) and dist/. With --fashion-mnist, Debian's
# Fashion-MNIST files too, recompressed with xz (26 MB instead of 31: the whole
# carry, repository included, must stay under 64 MiB).
#   tools/device/bundle.sh [--fashion-mnist]
set -euo pipefail
cd "$(dirname "$0")/../.."
TB_CUDA_ARCHITECTURES=90 npm run build >/dev/null
rm -rf .device && mkdir -p .device
xz -T0 -9e -c "$(command -v node)" > .device/node.xz
node tools/device/closure.mjs node_modules vitest @vitejs/plugin-vue zod commander systeminformation ws > .device/modules.txt
tar -C node_modules -cf - $(cat .device/modules.txt) | xz -T0 -6 > .device/node_modules.tar.xz
tar -cf - build/Release/trainbench_native.node dist | xz -T0 -6 > .device/build.tar.xz
if [[ "${1:-}" == "--fashion-mnist" ]]; then
  mkdir -p .device/fashion-mnist
  for f in /usr/share/datasets/fashion-mnist/*.gz; do gzip -dc "$f" | xz -T0 -9e > ".device/fashion-mnist/$(basename "$f" .gz).xz"; done
fi
du -sh .device/* | sed 's/^/  /'
echo "total $(du -sh .device | cut -f1): carry [\".device\"] and run: bash tools/device/run.sh <command>"
