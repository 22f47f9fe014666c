// @vitest-environment happy-dom
// Mixed precision on the CPU: the engine refuses it there ("precision 'bf16' needs a CUDA device"), so the forms do
// not offer it, a move to the CPU takes fp32 with it, and a New run link asking for it says why the form keeps fp32.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';
import { defineComponent, h, ref } from 'vue';

import type { Devices } from '../../src-main/api/devices';
import { newRunValuesFromQuery } from '../../src-renderer/components/optimise/apply-values';
import EngineTargetFields from '../../src-renderer/components/targets/EngineTargetFields.vue';

const GPU = { cuda: { devices: [{ index: 0, name: 'NVIDIA H200' }] } } as unknown as Devices;

function fields(device: string, precision: string) {
  const state = { device: ref(device), precision: ref(precision) };
  const Host = defineComponent(() => () =>
    h(EngineTargetFields, {
      model: 'mlp',
      data: 'fashion-mnist',
      device: state.device.value,
      'onUpdate:device': (v: string) => (state.device.value = v),
      precision: state.precision.value,
      'onUpdate:precision': (v: string) => (state.precision.value = v),
      devices: GPU,
      datasets: [],
      prefix: 't',
    }),
  );
  return { wrapper: mount(Host), state };
}

const option = (w: ReturnType<typeof mount>, value: string) => w.find(`[data-testid="t-precision"] option[value="${value}"]`).element as HTMLOptionElement;

describe('precision on the CPU', () => {
  it('offers bf16 and fp16 only on a CUDA device, and says why not on the CPU', async () => {
    const { wrapper, state } = fields('cpu', 'fp32');
    expect(option(wrapper, 'bf16').disabled).toBe(true);
    expect(option(wrapper, 'fp16').disabled).toBe(true);
    expect(option(wrapper, 'bf16').title).toBe('mixed precision needs a CUDA device: the CPU backend trains in fp32');
    state.device.value = 'cuda:0';
    await wrapper.vm.$nextTick();
    expect(option(wrapper, 'bf16').disabled).toBe(false);
    expect(option(wrapper, 'fp32').disabled).toBe(false);
  });

  it('goes back to fp32 when the device moves to the CPU', async () => {
    const { wrapper, state } = fields('cuda:0', 'bf16');
    await wrapper.find('[data-testid="t-device"]').setValue('cpu');
    expect(state.device.value).toBe('cpu');
    expect(state.precision.value).toBe('fp32');
  });

  it('a New run link asking for bf16 on the CPU keeps fp32 and says why; on a GPU it is taken', () => {
    const cpu = newRunValuesFromQuery({ new: '1', device: 'cpu', precision: 'bf16' })!;
    expect(cpu.values.precision).toBe('fp32');
    expect(cpu.notes).toEqual(['precision bf16 needs a CUDA device and this run is on the CPU; the form keeps fp32']);
    const gpu = newRunValuesFromQuery({ new: '1', device: 'cuda:0', precision: 'bf16' })!;
    expect(gpu.values.precision).toBe('bf16');
    expect(gpu.notes).toEqual([]);
  });
});
