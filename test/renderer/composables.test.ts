// @vitest-environment happy-dom
// The wizard and the heartbeat against the real services (real engine host, real files).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { effectScope } from 'vue';

import type { Services } from '../../src-main/core/services';
import { useEnginePing } from '../../src-renderer/composables/useEnginePing';
import { kindForFile, previewText, useImportWizard } from '../../src-renderer/composables/useImportWizard';
import { testServices } from '../helpers/services';
import { fail, installFakeClient } from './fake-client';
import { installServicesClient } from './services-client';

let sourceDir = '';
let services: Services;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ services, cleanup } = await testServices());
  // Sources are read only from inside the workspace.
  sourceDir = path.join(services.workspace.root, 'sources');
  mkdirSync(sourceDir, { recursive: true });
  writeFileSync(path.join(sourceDir, 'iris.csv'), ['sepal_length,species', '5.1,setosa', '7.0,versicolor', '6.3,virginica', '4.9,setosa'].join('\n') + '\n');
  writeFileSync(path.join(sourceDir, 'broken.npy'), 'not numpy at all');
}, 60_000);

afterAll(async () => {
  await cleanup?.();
});

describe('useImportWizard', () => {
  // The build is the datasets store's job (a build outlives the page), so the wizard runs where Pinia is, as in a component.
  beforeEach(() => setActivePinia(createPinia()));

  it('picks the importer from the file name', () => {
    expect(['a.npz', 'b.NPY', 'c.csv', 'train-images-idx3-ubyte.gz', 'dump.bin'].map(kindForFile)).toEqual(['npz', 'npy', 'csv', 'idx', 'raw']);
    expect(previewText([0, 2, 1.23456], ['setosa', 'versicolor', 'virginica'])).toBe('0 (setosa), 2 (virginica), 1.2346');
  });

  it('inspects a CSV, builds its cache with progress, and reports the result', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const built: string[] = [];
    const wizard = scope.run(() => useImportWizard({ onBuilt: (r) => built.push(r.dataset.name) }))!;
    wizard.addFile(path.join(sourceDir, 'iris.csv'));
    expect(wizard.kind.value).toBe('csv');
    expect(wizard.name.value).toBe('iris');
    wizard.csvLabel.value = 'species';

    await wizard.inspect();
    expect(wizard.error.value).toBeNull();
    expect(wizard.step.value).toBe('fields');
    expect(wizard.mapping.value.map((m) => m.from)).toEqual(['x', 'y']);

    await wizard.build();
    expect(wizard.error.value).toBeNull();
    expect(wizard.built.value?.dataset.records).toBe(4);
    expect(built).toEqual(['iris']);
    // Progress events of this job reached the wizard.
    expect(wizard.progress.value?.phase).toBeTruthy();
    expect(wizard.busy.value).toBe(false);

    wizard.restart();
    expect([wizard.step.value, wizard.files.value.length, wizard.name.value]).toEqual(['source', 0, '']);
    scope.stop();
  }, 60_000);

  it('shows the engine’s error, naming the file, for a source that is not what its name says', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    wizard.addFile(path.join(sourceDir, 'broken.npy'));
    await wizard.inspect();
    expect(wizard.step.value).toBe('source');
    expect(wizard.error.value).toMatch(/^E_DATA: .*broken\.npy is not a \.npy file/);
    scope.stop();
  }, 30_000);
});

describe('useEnginePing', () => {
  it('records real round trips to the engine host, keeping at most maxSamples, and stops with its scope', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const ping = scope.run(() => useEnginePing({ intervalMs: 20, maxSamples: 3 }))!;
    const seen: number[] = [];
    ping.onSample((s) => seen.push(s.at));
    await expect.poll(() => seen.length, { timeout: 5000 }).toBeGreaterThanOrEqual(5);
    expect(ping.samples.value).toHaveLength(3);
    for (const s of ping.samples.value) expect(s.roundTripMs).toBeGreaterThan(0);
    scope.stop();
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(seen.length).toBeLessThanOrEqual(after + 1); // one ping may have been in flight
  });

  it('records a failed ping as no answer (null), so the chart breaks there', async () => {
    installFakeClient(() => fail('E_ENGINE_CRASHED', 'the engine host exited'));
    const scope = effectScope();
    const ping = scope.run(() => useEnginePing({ intervalMs: 1000 }))!;
    await expect.poll(() => ping.samples.value.length).toBe(1);
    expect(ping.samples.value[0].roundTripMs).toBeNull();
    scope.stop();
  });
});
