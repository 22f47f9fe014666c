// @vitest-environment happy-dom
// The model and dataset selects sit in narrow cells of the New run and Optimise forms, which cut their labels
// ("Fashion-MNIST (Debi…"): each carries its chosen option's whole label as a tooltip, a sized model's included.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import type { DatasetSummary } from '../../src-main/api/datasets';
import type { Devices } from '../../src-main/api/devices';
import { sizedChoice } from '../../src-main/api/model-sizing';
import EngineTargetFields from '../../src-renderer/components/targets/EngineTargetFields.vue';

const CPU = { cuda: { devices: [] } } as unknown as Devices;
const rows = { id: 'rows-0123456789ab', name: 'rows', records: 300, problem: null, fields: [{ name: 'x', dtype: 'float32', shape: [2] }, { name: 'y', dtype: 'int32', shape: [], classes: ['a', 'b', 'c'] }] } as unknown as DatasetSummary;

const titleOf = (w: ReturnType<typeof mount>, field: string) => (w.find(`[data-testid="t-${field}"]`).element as HTMLSelectElement).title;

describe('the model and dataset selects', () => {
  it("carry the chosen option's whole label as a tooltip", () => {
    const w = mount(EngineTargetFields, { props: { model: 'mlp', data: 'fashion-mnist', device: 'cpu', devices: CPU, datasets: [], prefix: 't' } });
    expect(titleOf(w, 'data')).toBe('Fashion-MNIST (Debian package)');
    expect(titleOf(w, 'model')).toBe('mlp');
  });

  it('name a model sized to a workspace dataset as its option does', () => {
    const w = mount(EngineTargetFields, { props: { model: sizedChoice('mlp'), data: `dataset:${rows.id}`, device: 'cpu', devices: CPU, datasets: [rows], prefix: 't', sized: true } });
    expect(titleOf(w, 'data')).toBe('rows (300 records)');
    expect(titleOf(w, 'model')).toMatch(/^mlp sized to rows \(.+\)$/);
  });
});
