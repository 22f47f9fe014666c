// Whether the GPU suites run. Without a usable CUDA device they skip and print
// why; under TB_REQUIRE_GPU=1 (npm run test:gpu, tools/device/run.sh) the
// missing device is a failing test carrying the driver's reason instead, so a
// GPU run can never pass having run nothing (no device, a driver too old for
// the static CUDA runtime, a build without the CUDA backend).
import { describe, it } from 'vitest';

import { loadAddon } from '../helpers/native';

// `npm run test:gpu` requires a GPU by its name too, since a `VAR=1 cmd` prefix in package.json does not work in Windows cmd.
export const REQUIRE_GPU = process.env.TB_REQUIRE_GPU === '1' || process.env.npm_lifecycle_event === 'test:gpu';

/**
 * Whether the device is the emulated one (npm run test:gpu-emu): the CUDA code runs on the CPU,
 * thousands of times slower, so a test that needs a GPU's speed (a whole epoch of Fashion-MNIST)
 * says so and skips there; everything else runs.
 */
export const EMULATED = loadAddon().devices().cuda.emulated === true;

/**
 * A test's time limit on this device. On the emulated one every CUDA thread is a fiber on the
 * CI machine's two cores: a board-network step pair takes ~33 s alone and over 120 s beside other
 * work. The emulator reports a deadlock itself, so there the limit only bounds a slow machine.
 */
export function gpuTimeout(ms: number): number {
  return EMULATED ? ms * 5 : ms;
}

/** Why cuda:0 cannot be used here, or null when it can. */
export function cudaUnavailableReason(): string | null {
  const cuda = loadAddon().devices().cuda;
  if (cuda.available) return null;
  return cuda.compiled ? (cuda.reason ?? 'no CUDA device') : 'this build has no CUDA backend (nvcc was not found, no NVIDIA GPU was found at build time, or TB_WITH_CUDA=OFF)';
}

/**
 * Call once per GPU test file: true when its suites can run. Otherwise prints the reason, and under
 * TB_REQUIRE_GPU=1 adds a test that fails with it.
 */
export function gpuAvailable(suite: string): boolean {
  const reason = cudaUnavailableReason();
  if (reason === null) return true;
  if (REQUIRE_GPU) {
    describe(`${suite}: a CUDA device`, () => {
      it('is present (TB_REQUIRE_GPU=1)', () => {
        throw new Error(`TB_REQUIRE_GPU=1 but no usable CUDA device: ${reason}`);
      });
    });
  } else {
    console.log(`${suite} skipped: ${reason} (TB_REQUIRE_GPU=1 makes this a failure)`);
  }
  return false;
}
