// @vitest-environment happy-dom
// Found walking the UI (UI round 4): reloaded 36 s into an optimisation, its progress read "elapsed 0:10 · ETA 0:48":
// the newest event is replayed, and it was said at 0:10 (events come at repetition boundaries), so counting on from its
// arrival set the clock back. The elapsed time counts from the job's start, and the ETA is the event's less the time since.
import { mount } from '@vue/test-utils';
import { createPinia, setActivePinia } from 'pinia';
import { describe, expect, it } from 'vitest';

import type { JobInfo } from '../../src-main/api/jobs';
import type { OptimiseProgress } from '../../src-main/api/optimise';
import OptimiseProgressView from '../../src-renderer/components/optimise/OptimiseProgress.vue';
import { useJobsStore } from '../../src-renderer/stores/jobs';
import { installFakeClient, ok } from './fake-client';

const progress = { jobId: 'opt-1', target: 'engine', runId: null, phase: 'baseline', trial: null, maxTrials: 3, repetition: 1, repetitions: 5, label: null, elapsedSeconds: 10, etaSeconds: 48, finishedTrial: null } as OptimiseProgress;

function shown(jobs: Partial<JobInfo>[]) {
  const pinia = createPinia();
  setActivePinia(pinia);
  installFakeClient(() => ok(null));
  useJobsStore().live = jobs as JobInfo[];
  return mount(OptimiseProgressView, { props: { progress }, global: { plugins: [pinia] } }).get('[data-testid="opt-eta"]').text();
}

describe('the Optimise progress clock after a reload', () => {
  it('counts elapsed from the job start, and the ETA on from when the replayed event was said', () => {
    const startedAt = new Date(Date.now() - 36_000).toISOString();
    expect(shown([{ jobId: 'opt-1', startedAt }])).toBe('elapsed 0:36 · ETA 0:22');
  });

  it('without the job in the list (a wizard another process runs), counts on from the event as before', () => {
    expect(shown([])).toBe('elapsed 0:10 · ETA 0:48');
  });
});
