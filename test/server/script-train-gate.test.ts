// Issue 14 (Runs area): train.run on a script target starts the user's command, so through the router it is
// refused unless the shell allows scripts (the desktop app, serve --allow-scripts).
import { existsSync } from 'node:fs';

import { afterEach, describe, expect, it } from 'vitest';

import { ApiError } from '../../src-main/api/errors';
import { createServices, type Services } from '../../src-main/core/services';
import { HOST_ENTRY, requireBuilt } from '../helpers/repo';
import { tempDir } from '../helpers/temp-dir';

describe('train.run on a script target through the router', () => {
  const open: { services: Services; cleanup(): void }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.services.dispose();
      o.cleanup();
    }
  });

  async function services(allowScripts?: boolean): Promise<Services> {
    requireBuilt();
    const ws = tempDir();
    const s = await createServices({ workspaceDir: ws.dir, engine: { entry: HOST_ENTRY }, allowScripts });
    open.push({ services: s, cleanup: ws.cleanup });
    return s;
  }
  const request = (cwd: string, jobId: string) => ({ target: { kind: 'script', command: ['/bin/sh', '-c', 'touch ran-a-command'], cwd }, jobId });

  it('is refused without --allow-scripts, naming how to allow it, starts nothing and records no run', async () => {
    const s = await services();
    const cwd = tempDir();
    const err = await s.router.dispatch('train.run', request(cwd.dir, 'refused-run')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('E_FORBIDDEN');
    expect((err as ApiError).message).toContain('--allow-scripts');
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(false);
    expect(await s.router.dispatch('runs.list', {})).toEqual([]);
    cwd.cleanup();
  });

  it('runs where scripts are allowed, and a command that trains nothing is a failed run saying so', async () => {
    const s = await services(true);
    const cwd = tempDir();
    const err = await s.router.dispatch('train.run', request(cwd.dir, 'allowed-run')).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_SCRIPT');
    expect((err as ApiError).message).toContain("ran no optimizer step that Trainbench's probe saw");
    expect(existsSync(`${cwd.dir}/ran-a-command`)).toBe(true);
    const [run] = (await s.router.dispatch('runs.list', {})) as { id: string; kind: string; status: string; title: string }[];
    expect(run).toMatchObject({ id: 'allowed-run', kind: 'train', status: 'failed', title: 'script /bin/sh -c touch ran-a-command' });
    cwd.cleanup();
  });

  it('refuses a bad request before anything runs, naming the field', async () => {
    const s = await services(true);
    const err = await s.router.dispatch('train.run', { target: { kind: 'script', command: ['python3'], cwd: '/tmp' }, maxSteps: -3 }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe('E_BAD_REQUEST');
    expect((err as ApiError).message).toContain('maxSteps');
  });
});
