import type { JobInfo, JobKind } from '@api/jobs';

/** Where each kind of job is shown, by the area's route. */
export const JOB_AREAS: Record<JobKind, string> = {
  train: '/runs',
  benchmark: '/benchmarks',
  batchSize: '/batch-size',
  optimise: '/optimise',
  dataset: '/datasets',
  loader: '/datasets',
};

const KIND_NAMES: Record<JobKind, string> = {
  train: 'training run',
  benchmark: 'training benchmark',
  batchSize: 'batch-size search',
  optimise: 'optimisation',
  dataset: 'dataset build',
  loader: 'loader benchmark',
};

/** "training run · script", "dataset build". */
export function jobLabel(job: Pick<JobInfo, 'kind' | 'target'>): string {
  return job.target ? `${KIND_NAMES[job.kind]} · ${job.target}` : KIND_NAMES[job.kind];
}

/** How long a job has run, from its start: "42 s", "3 min 05 s". */
export function jobAge(startedAt: string, now: number): string {
  const s = Math.max(0, Math.round((now - Date.parse(startedAt)) / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}
