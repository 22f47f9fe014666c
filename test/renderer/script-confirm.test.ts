// @vitest-environment happy-dom
// The confirmation before a user's command runs says plainly when its environment
// changes which code runs (issue 23): LD_PRELOAD, LD_LIBRARY_PATH, PYTHONPATH,
// NODE_OPTIONS, PATH. The person may want them; they must see them.
import { mount } from '@vue/test-utils';
import { describe, expect, it } from 'vitest';

import ScriptConfirm from '../../src-renderer/components/script/ScriptConfirm.vue';

const request = (env: Record<string, string>) => ({ target: { kind: 'script' as const, command: ['python3', 'train.py'], cwd: '/home/me/project', env }, overrides: {} });

describe('ScriptConfirm', () => {
  it('warns for each variable that changes which code runs, with what it does, and not for the others', () => {
    const wrapper = mount(ScriptConfirm, { props: { request: request({ LD_PRELOAD: '/tmp/evil.so', PATH: '/tmp/bin', CUDA_VISIBLE_DEVICES: '1' }) } });
    const warning = wrapper.get('[data-test="confirm-env-warning"]');
    expect(warning.attributes('role')).toBe('alert');
    expect(warning.text()).toContain('LD_PRELOAD loads these libraries into the program');
    expect(warning.text()).toContain('PATH changes which programs are found by name');
    expect(warning.text()).not.toContain('CUDA_VISIBLE_DEVICES');
    // Every variable is still listed with its value.
    expect(wrapper.findAll('[data-test="confirm-env"]').map((e) => e.text())).toEqual(['LD_PRELOAD=/tmp/evil.so', 'PATH=/tmp/bin', 'CUDA_VISIBLE_DEVICES=1']);
  });

  it('shows no warning for an environment that only configures the program', () => {
    const wrapper = mount(ScriptConfirm, { props: { request: request({ CUDA_VISIBLE_DEVICES: '0', OMP_NUM_THREADS: '4' }) } });
    expect(wrapper.find('[data-test="confirm-env-warning"]').exists()).toBe(false);
  });

  it('shows the folder as written, warns when it climbs with "..", and shows a listener the request asks for (re-attacks 7 and 8 of issue 41)', () => {
    const planted = { target: { kind: 'script' as const, command: ['python3', 'train.py'], cwd: '/srv/ws/l/../../home/me/project', env: {} }, overrides: {}, collector: { host: '0.0.0.0', port: 29555 } };
    const wrapper = mount(ScriptConfirm, { props: { request: planted } });
    expect(wrapper.get('[data-test="confirm-cwd"]').text()).toBe('/srv/ws/l/../../home/me/project');
    expect(wrapper.get('[data-test="confirm-cwd-climbs"]').text()).toContain('where it leads depends on the links along it');
    expect(wrapper.get('[data-test="confirm-listens"]').text()).toBe('on 0.0.0.0:29555 for the ranks of other machines');
    const plain = mount(ScriptConfirm, { props: { request: request({}) } });
    expect(plain.get('[data-test="confirm-cwd"]').text()).toBe('/home/me/project');
    expect(plain.find('[data-test="confirm-cwd-climbs"]').exists()).toBe(false);
    expect(plain.find('[data-test="confirm-listens"]').exists()).toBe(false);
    // A name that only starts with dots is not a climb.
    const dotted = mount(ScriptConfirm, { props: { request: { ...request({}), target: { ...request({}).target, cwd: '/home/me/..hidden/.cache-x' } } } });
    expect(dotted.find('[data-test="confirm-cwd-climbs"]').exists()).toBe(false);
  });
});
