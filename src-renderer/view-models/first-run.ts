import type { Devices } from '@api/devices';
import type { RunSummary } from '@api/training';

import type { OptimiseFormValues } from './optimise-form';
import { launchesAtMost, optimiseFormValues } from './optimise-form';

/** A first step the Dashboard offers an empty workspace; each lands in its area with its target chosen. */
export type FirstStep = 'example' | 'script' | 'import';

/**
 * What `npm start` optimises (package.json's start script; a test keeps the two in step): the board
 * network on the built-in example positions, measured briefly so a first result comes in minutes.
 */
export const BUILT_IN_EXAMPLE = {
  model: 'bottleneck_resnet',
  data: 'example-board',
  warmupSteps: 2,
  steps: 8,
  /** 8 steps are 1.7 s on a 2-core CPU and 60 ms on an H100: there the window widens to a second. */
  minWindowSeconds: 1,
  maxTrials: 3,
} as const satisfies Partial<OptimiseFormValues>;

/** No run recorded yet: nothing trained, benchmarked or optimised in this workspace. */
export function isEmptyWorkspace(runs: readonly RunSummary[]): boolean {
  return runs.length === 0;
}

/** `--device auto` as the engine resolves it: the first GPU when the engine sees one, else the CPU. */
export function autoDevice(devices: Devices | null): string {
  const first = devices?.cuda.available ? devices.cuda.devices[0] : undefined;
  return first ? `cuda:${first.index}` : 'cpu';
}

/**
 * The Optimise form on the built-in example, as `npm start` runs it, on the device it would pick (on the CPU the
 * batch-size search is unticked, as in every form that opens there: `npm start` skips it too).
 */
export function exampleOptimiseForm(devices: Devices | null): OptimiseFormValues {
  const { model, data, warmupSteps, steps, minWindowSeconds, maxTrials } = BUILT_IN_EXAMPLE;
  const device = autoDevice(devices);
  return { ...optimiseFormValues(model, { data, device }), warmupSteps, steps, minWindowSeconds, maxTrials };
}

/**
 * Seconds one step of the example takes on the CPU, times the logical cores. Measured on 2 cores (2026-12-07, a
 * fresh workspace): setup, baseline and 3 trials, 35 repetitions of 10 steps, in 97 s, 1.8 s a repetition with the
 * engine's start; the 0.9 s a step of issue 41's 8 minutes is gone since. More cores share the arithmetic, less
 * than evenly.
 */
const CPU_STEP_CORE_SECONDS = 0.2;
/** A GPU repetition: the engine's start, the warm-up and a measured window widened to at least minWindowSeconds. */
const GPU_REPETITION_SECONDS = 2.5;
/** Once per wizard: the example's data made and cached (first use), the limits measured, the engine loaded. */
const SETUP_SECONDS = 20;

/** How long the example's wizard takes at most, as a range in minutes, from its settings and the device it runs on. */
export function exampleEstimate(devices: Devices | null, repeat: number): { repetitions: number; stepsEach: number; minutes: [number, number]; basis: string } {
  const { warmupSteps, steps, maxTrials } = BUILT_IN_EXAMPLE;
  const repetitions = launchesAtMost(repeat, maxTrials);
  const stepsEach = warmupSteps + steps;
  const cores = Math.max(1, devices?.cpu.logicalCores ?? 2);
  const onGpu = autoDevice(devices) !== 'cpu';
  const perRepetition = onGpu ? GPU_REPETITION_SECONDS : 1 + stepsEach * Math.max(0.02, CPU_STEP_CORE_SECONDS / Math.sqrt(cores * Math.min(cores, 2)));
  const seconds = SETUP_SECONDS + repetitions * perRepetition;
  const minutes: [number, number] = [Math.max(1, Math.floor((0.8 * seconds) / 60)), Math.max(2, Math.ceil((1.2 * seconds) / 60))];
  const basis = onGpu ? 'on the GPU' : `on this computer's ${cores} CPU core${cores === 1 ? '' : 's'}`;
  return { repetitions, stepsEach, minutes, basis };
}

/** The first step a route's query asks for (`?start=example`), or null. */
export function firstStepOf(query: unknown): FirstStep | null {
  return query === 'example' || query === 'script' || query === 'import' ? query : null;
}
