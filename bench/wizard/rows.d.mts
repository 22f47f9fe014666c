// Types of rows.mjs, for the tests that import it.
export interface Interval {
  low: number;
  median: number;
  high: number;
}

export interface MeasuredVariant {
  id: string;
  label: string;
  command: string[];
  overrides: Record<string, string | number | boolean>;
  /** Another variant's id whose configuration this is (measured once), or null. */
  sameAs: string | null;
  samples: number[];
  wizard?: WizardSummary;
}

export interface WorkloadRow extends MeasuredVariant {
  samplesPerSec: Interval;
  speedupOverPlain: Interval;
  shareOfExpert: Interval;
}

export interface WizardTrialSummary {
  change: string;
  decision: 'accept' | 'reject' | 'inconclusive' | 'crashed' | 'changes-results' | 'proposed' | 'confounded';
  kept: boolean;
  speedup: Interval | null;
  lossDelta: number | null;
  why: string;
  seconds: number;
  error: string | null;
}

export interface WizardSummary {
  preset: string;
  status: string;
  wallSeconds: number;
  reportedSeconds: number;
  baseline: Interval;
  noiseFloor: number;
  diagnosis: unknown;
  overrides: Record<string, string | number | boolean>;
  kept: { change: string; speedup: Interval | null; why: string }[];
  rejected: { change: string; decision: string; why: string }[];
  undecided: { change: string; decision: string; why: string }[];
  notTried: { change: string; why: string }[];
  trials: WizardTrialSummary[];
  lossCheck: { verdict: string; rejectedForLoss: string[] } & Record<string, unknown>;
  finalVerdict: string;
}

export declare function workloadRows(measured: MeasuredVariant[]): WorkloadRow[];
export declare function tableLines(workload: string, rows: WorkloadRow[]): string[];
export declare function wizardSummary(result: unknown, wallSeconds: number): WizardSummary;
