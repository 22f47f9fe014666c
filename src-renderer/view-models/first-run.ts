import type { Devices } from '@api/devices';
import type { RunSummary } from '@api/training';

import type { OptimiseFormValues } from './optimise-form';
import { optimiseFormValues } from './optimise-form';

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

/** The Optimise form on the built-in example, as `npm start` runs it, on the device it would pick. */
export function exampleOptimiseForm(devices: Devices | null): OptimiseFormValues {
  const { model, data, warmupSteps, steps, minWindowSeconds, maxTrials } = BUILT_IN_EXAMPLE;
  return { ...optimiseFormValues(model, { data, device: autoDevice(devices) }), warmupSteps, steps, minWindowSeconds, maxTrials };
}

/** The first step a route's query asks for (`?start=example`), or null. */
export function firstStepOf(query: unknown): FirstStep | null {
  return query === 'example' || query === 'script' || query === 'import' ? query : null;
}
