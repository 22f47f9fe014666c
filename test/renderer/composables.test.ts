// @vitest-environment happy-dom
// The wizard and the heartbeat against the real services (real engine host, real files).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { createPinia, setActivePinia } from 'pinia';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { effectScope } from 'vue';

import type { Services } from '../../src-main/core/services';
import { useEnginePing } from '../../src-renderer/composables/useEnginePing';
import { buildProblem, fieldProblem, kindForFile, shapeProblem, nextFieldName, previewText, useImportWizard } from '../../src-renderer/composables/useImportWizard';
import { npyBytes } from '../helpers/numpy';
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
  writeFileSync(path.join(sourceDir, 'headless.csv'), '5.1,3.5,0\n4.9,3.0,1\n');
  const features = new Float32Array(30 * 2).map((_, i) => i);
  writeFileSync(path.join(sourceDir, 'feat.npy'), npyBytes('<f4', [30, 2], new Uint8Array(features.buffer)));
  writeFileSync(path.join(sourceDir, 'lab.npy'), npyBytes('<i4', [30], new Uint8Array(new Int32Array(30).map((_, i) => i % 2).buffer)));
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
    // One record's values in one style: no "0" beside "0.0000", and no non-zero value shown as zero.
    expect(previewText([0, 0.5, 0.25])).toBe('0.00, 0.50, 0.25');
    expect(previewText([0, 3, 12])).toBe('0, 3, 12');
    expect(previewText([0, 1.23456, -2])).toBe('0.0000, 1.2346, -2.0000');
    expect(previewText([0, 0.00001])).toBe('0, 1.00e-5');
    expect(previewText([NaN, 1.5, Infinity])).toBe('NaN, 1.5, Infinity');
    expect(previewText([2e12, 0.5])).toBe('2.00e+12, 0.5');
    // A field's rows in the style of all of them.
    expect(previewText([0], undefined, [0, 0.25, 1])).toBe('0.00');
  });

  it('inspects a CSV, builds its cache with progress, and reports the result', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const built: string[] = [];
    const wizard = scope.run(() => useImportWizard({ onBuilt: (r) => built.push(r.dataset.name) }))!;
    wizard.addFile(path.join(sourceDir, 'iris.csv'));
    expect(wizard.kind.value).toBe('csv');
    expect(wizard.name.value).toBe('iris');
    // The header is read when the file is chosen; Inspect waits for it, then the likely label is chosen.
    expect(wizard.sourceProblem.value).toBe('Reading the header…');
    await expect.poll(() => wizard.csvColumns.value).toEqual(['sepal_length', 'species']);
    expect(wizard.csvLabel.value).toBe('species');
    expect(wizard.sourceProblem.value).toBeNull();

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

  it('says why a CSV without a header cannot be imported, naming the file, and offers no label', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    wizard.addFile(path.join(sourceDir, 'headless.csv'));
    await expect.poll(() => wizard.error.value).toMatch(/^(?!E_).*headless\.csv has no header row: its first line \(5\.1, 3\.5, 0\) is numbers/);
    expect(wizard.csvColumns.value).toEqual([]);
    expect(wizard.sourceProblem.value).toBe('Choose the label column.');
    // Another file starts over: the error goes, its header is read.
    wizard.addFile(path.join(sourceDir, 'iris.csv'));
    expect(wizard.error.value).toBeNull();
    await expect.poll(() => wizard.csvLabel.value).toBe('species');
    scope.stop();
  }, 30_000);

  it('pairs several .npy files as named fields: x, then y, each removable and renamable', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    wizard.addFile(path.join(sourceDir, 'feat.npy'));
    wizard.addFile(path.join(sourceDir, 'lab.npy'));
    expect(wizard.kind.value).toBe('npy');
    expect(wizard.files.value.map((f) => f.field)).toEqual(['x', 'y']);
    expect(wizard.name.value).toBe('feat');
    await wizard.inspect();
    expect(wizard.error.value).toBeNull();
    expect(wizard.inspected.value?.fields.map((f) => `${f.name}:${f.dtype}`)).toEqual(['x:float32', 'y:int32']);
    expect(wizard.inspected.value?.records).toBe(30);

    // Choosing a file twice is refused in words; removing the first frees its name for the next file.
    wizard.step.value = 'source';
    wizard.addFile(path.join(sourceDir, 'lab.npy'));
    expect(wizard.error.value).toBe('lab.npy is already chosen: pick another file for the next field.');
    wizard.removeFile(0);
    expect(wizard.files.value.map((f) => f.field)).toEqual(['y']);
    wizard.files.value[0].field = 'y y';
    expect(wizard.sourceProblem.value).toBe("Field name 'y y' of lab.npy: use letters, digits, _ . - and start with a letter or _.");
    await wizard.inspect();
    expect(wizard.error.value).toBe(wizard.sourceProblem.value);
    // A CSV chosen now starts over as a CSV.
    wizard.addFile(path.join(sourceDir, 'iris.csv'));
    expect([wizard.kind.value, wizard.files.value.length]).toEqual(['csv', 1]);
    scope.stop();
  }, 30_000);

  it('names the field and the file when field names are missing or repeated', () => {
    expect(nextFieldName([])).toBe('x');
    expect(nextFieldName(['x'])).toBe('y');
    expect(nextFieldName(['y'])).toBe('x');
    expect(nextFieldName(['x', 'y'])).toBe('field3');
    expect(fieldProblem([{ path: 'sources/a.npy', field: ' ' }])).toBe('Give a.npy a field name (features are usually x, labels y).');
    expect(fieldProblem([{ path: 'sources/a.npy', field: 'x' }, { path: 'sources/b.npy', field: 'x' }])).toBe(
      "Field name 'x' is given to both a.npy and b.npy: each file needs its own.",
    );
    expect(fieldProblem([{ path: 'sources/a.npy', field: 'x' }, { path: 'sources/b.npy', field: 'y' }])).toBeNull();
    expect(shapeProblem({ path: 'sources/planes.bin', shape: '104, 9,9' })).toBeNull();
    expect(shapeProblem({ path: 'sources/value.bin', shape: '' })).toBeNull();
    expect(shapeProblem({ path: 'sources/planes.bin', shape: '104,x,9' })).toBe(
      "Per-record shape '104,x,9' of planes.bin: 'x' is not a positive whole number (e.g. 104,9,9; empty for one value).",
    );
    expect(shapeProblem({ path: 'sources/planes.bin', shape: '0' })).toMatch(/'0' is not a positive whole number/);
  });

  it('names the setting and its value when the fields step cannot build', () => {
    const ok = { name: 'iris', shardMiB: 1024, sampleRatio: 1, mapping: [{ from: 'x', to: 'x' }, { from: 'y', to: 'y' }] };
    expect(buildProblem(ok)).toBeNull();
    expect(buildProblem({ ...ok, name: '' })).toBe('Give the dataset a name.');
    expect(buildProblem({ ...ok, name: 'my data' })).toBe("Name 'my data': use letters, digits, . _ - (not starting with '.'), at most 64 characters.");
    expect(buildProblem({ ...ok, name: '.hidden' })).toMatch(/^Name '\.hidden'/);
    expect(buildProblem({ ...ok, mapping: [{ from: 'x', to: 'pixels!' }] })).toBe("Field x cached as 'pixels!': use letters, digits, _ . - and start with a letter or _.");
    expect(buildProblem({ ...ok, mapping: [{ from: 'x', to: 'x' }, { from: 'y', to: 'x' }] })).toBe("Fields x and y are both cached as 'x': each needs its own name.");
    expect(buildProblem({ ...ok, shardMiB: 0 })).toBe('Shard size: a number of MiB, at least 1.');
    expect(buildProblem({ ...ok, sampleRatio: 1.5 })).toBe('Benchmark sample ratio: above 0 and at most 1 (1 reads every record).');
  });

  it('shows the engine’s error, naming the file, for a source that is not what its name says', async () => {
    installServicesClient(services);
    const scope = effectScope();
    const wizard = scope.run(() => useImportWizard())!;
    wizard.addFile(path.join(sourceDir, 'broken.npy'));
    await wizard.inspect();
    expect(wizard.step.value).toBe('source');
    expect(wizard.error.value).toMatch(/^(?!E_).*broken\.npy is not a \.npy file/);
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
