import { formatValue } from './charts/theme';

/**
 * What a finding's measurement is, in words a person reads (the key stays in the JSON for tools): the UI never
 * shows `phasesPercent.compute` or `baseline.noiseFloor` (issue 27).
 */
const WORDS: Record<string, string> = {
  'baseline.noiseFloor': 'noise of the baseline (half its interval)',
  'baseline.windowSeconds': 'measured time per repetition',
  'memory.headroom': 'device memory free',
  'namedPhasesExceedStepMs': 'phase timers over the step',
  'phasesMs.data': 'waiting for data, per step',
  'phasesPercent.compute': 'computing, share of the step',
  'phasesPercent.data': 'waiting for data, share of the step',
  'phasesPercent.h2d': 'copying to the GPU, share of the step',
  'phasesPercent.other': 'outside the named phases, share of the step',
  repeat: 'repetitions',
  'samplesPerSecCi.widthPercent': 'spread of samples/s between repetitions',
  steps: 'measured steps',
  'stepTime.wallClockToSteadyRatio': 'wall-clock step over steady step',
  'telemetry.gpuUtilizationMean': 'GPU busy, mean',
};

export function measurementLabel(name: string): string {
  return WORDS[name] ?? name.replace(/([a-z])([A-Z])/g, '$1 $2').replace(/\./g, ' ').toLowerCase();
}

/** A finding's measurement as shown beside its text: "waiting for data, per step: 3.2 ms"; a value whose unit is its label alone ("2 repetitions", not "repetitions: 2 repetitions"). */
export function measurementText(m: { name: string; value: number; unit: string }): string {
  const label = measurementLabel(m.name);
  const value = formatValue(m.value, m.unit);
  return m.unit && label === m.unit ? value : `${label}: ${value}`;
}
