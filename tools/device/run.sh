#!/usr/bin/env bash
# On the GPU machine: unpacks .device/ (see bundle.sh) into place and runs the
# given command with that node first on PATH. TB_REQUIRE_GPU=1 makes the GPU
# tests fail, with the driver's reason, if the device cannot be used (they
# would otherwise skip and pass having run nothing); TB_CUBLASLT points at
# PyTorch's cuBLASLt so the cuBLASLt paths are tested too; TRAINBENCH_FASHION_MNIST
# points at the carried dataset when there is one. Example:
#   bash tools/device/run.sh bash -c 'node node_modules/vitest/vitest.mjs run test/gpu; node bench/gpu/race.mjs'
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p /tmp/tb-node/bin
xz -dc .device/node.xz > /tmp/tb-node/bin/node && chmod +x /tmp/tb-node/bin/node
export PATH="/tmp/tb-node/bin:$PATH"
mkdir -p node_modules && xz -dc .device/node_modules.tar.xz | tar -C node_modules -xf -
mkdir -p node_modules/.bin && ln -sf ../vitest/vitest.mjs node_modules/.bin/vitest
xz -dc .device/build.tar.xz | tar -xf -
if [[ -d .device/fashion-mnist ]]; then
  mkdir -p /tmp/tb-fashion-mnist
  for f in .device/fashion-mnist/*.xz; do xz -dc "$f" | gzip -1 > "/tmp/tb-fashion-mnist/$(basename "$f" .xz).gz"; done
  export TRAINBENCH_FASHION_MNIST=/tmp/tb-fashion-mnist
fi
export TB_REQUIRE_GPU=1
# Runs and reports name the commit the kit was built from, not the copy's older .git.
[[ -f .device/commit ]] && export TRAINBENCH_COMMIT="$(cat .device/commit)"
if [[ -z "${TB_CUBLASLT:-}" ]]; then
  TB_CUBLASLT="$(python3 -c 'import glob,os,nvidia.cublas as c;p=glob.glob(os.path.join(list(c.__path__)[0],"lib","libcublasLt.so*"));print(p[0] if p else "")' 2>/dev/null || true)"
  [[ -n "$TB_CUBLASLT" ]] && export TB_CUBLASLT
fi
"$@"
