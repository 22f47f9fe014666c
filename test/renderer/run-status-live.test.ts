// @vitest-environment happy-dom
// A training run's row in the Runs list says how far it got from the run's file, read when the list was: while
// this window follows the run live, the row says the newest step it heard (a UI walk saw "at step 3,144" under
// a live panel at 3,852). A finished run's row is its file's.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { RunSummary } from '../../src-main/api/training';
import RunStatus from '../../src-renderer/components/runs/RunStatus.vue';

const summary = (status: RunSummary['status'], globalStep: number): RunSummary => ({
  id: '20261205-072000-abcdef', kind: 'train', status, createdAt: '2026-12-05T07:20:00.000Z', finishedAt: null, title: 'mlp on rows', testAccuracy: null,
  samplesPerSec: null, gpuUtilizationMean: null, error: null, lastStep: { epoch: 786, epochs: 2000, globalStep, totalSteps: 8000 }, interruption: null, problem: null,
});
const live = { epoch: 963, epochs: 2000, globalStep: 3852, totalSteps: 8000 };

describe("a training run's row while it runs", () => {
  it('says the newest step heard live, not the one its file had when the list was read', () => {
    const w = mount(RunStatus, { props: { run: summary('running', 3144), liveStep: live } });
    expect(w.text()).toBe('runningat step 3,852 of 8,000 (epoch 963/2000)');
  });

  it("keeps the file's step where it is the newer one, and where the run is not running", () => {
    expect(mount(RunStatus, { props: { run: summary('running', 4000), liveStep: live } }).text()).toContain('at step 4,000 of 8,000');
    expect(mount(RunStatus, { props: { run: summary('running', 3144), liveStep: null } }).text()).toContain('at step 3,144 of 8,000');
  });
});

describe("a failed run's row in the list", () => {
  // A UI walk: a script's error carried its last 20 output lines into the status cell, squeezing every column.
  const error = `E_SCRIPT: the command ran no optimizer step that Trainbench's probe saw (command: python3 train.py): it must run a PyTorch training loop; its last lines: ${Array.from({ length: 20 }, (_, i) => `step ${i + 1} loss 0.5`).join(' ')}`;
  const failed = { ...summary('failed', 0), kind: 'train' as const, error };

  it('is cut to two lines in the list, with the whole message on hover', () => {
    const cell = mount(RunStatus, { props: { run: failed, brief: true } }).find('.detail');
    expect(cell.classes()).toContain('brief');
    expect(cell.attributes('title')).toBe(cell.text());
    expect(cell.text()).toContain('step 20 loss 0.5');
  });

  it("is whole on the run's own page, its code on hover", () => {
    const cell = mount(RunStatus, { props: { run: failed } }).find('.detail');
    expect(cell.classes()).not.toContain('brief');
    expect(cell.attributes('title')).toBe('E_SCRIPT');
  });
});

describe("a batch-size search's row", () => {
  const search = (status: RunSummary['status']): RunSummary => ({ ...summary(status, 0), kind: 'batch-search', title: 'batch-size search of mlp', lastStep: null });

  it('says no step it never had: a search trains in trials', () => {
    expect(mount(RunStatus, { props: { run: search('running') } }).text()).toBe('running');
    const interrupted = { ...search('interrupted'), interruption: 'the process ended (pid 12) before the run did' };
    expect(mount(RunStatus, { props: { run: interrupted } }).text()).toBe('interruptedthe process ended (pid 12) before the run did');
  });
});
