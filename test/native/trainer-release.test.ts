// Trainer.release() (issue 26 item 6): the engine host frees a trainer when its run ends instead of waiting for the
// garbage collector, which never hurried for a small JS object holding ~250 MB of native buffers and mappings.
import { describe, expect, it } from 'vitest';

import { boardData, loadAddon, RESNET_SPEC, thrown } from '../helpers/native';

const addon = loadAddon();
const json = JSON.stringify;

describe('Trainer.release', () => {
  it('is refused while a job runs, and afterwards every call names the release instead of crashing', async () => {
    const t = new addon.Trainer(json(RESNET_SPEC), json({ seed: 2 }));
    t.setData('train', boardData(32, 3));
    const training = t.train(json({ batchSize: 16, maxSteps: 2 }));
    expect(thrown(() => t.release())).toMatchObject({ code: 'E_BAD_INPUT', message: 'cannot release a trainer while a job is running' });
    await training;
    t.release();
    for (const call of [() => t.info(), () => t.params(), () => t.setData('train', boardData(32, 3)), () => t.train(json({ batchSize: 16, maxSteps: 1 }))]) {
      expect(thrown(call)).toMatchObject({ code: 'E_BAD_INPUT', message: 'this trainer was released: make a new one' });
    }
    t.release(); // twice: nothing left to free, and no error
  });
});
