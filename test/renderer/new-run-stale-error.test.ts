// The New run form's errors go once their field is fixed (issue 41 item 5), re-checked by the contract's schema.
import { describe, expect, it } from 'vitest';

import { errorsStillTrue, recipeOverUntouched, recipeValues, trainRequest } from '../../src-renderer/components/runs/new-run-values';

describe('errors still true', () => {
  const form = recipeValues('mlp', { data: 'fashion-mnist', device: 'cpu' });

  it('drops a field’s error once the field validates, and keeps the others in their current words', () => {
    const bad = { ...form, batchSize: 0, epochs: 0 };
    const shown = trainRequest(bad).errors!;
    expect(Object.keys(shown).sort()).toEqual(['batchSize', 'epochs']);
    const fixedOne = { ...bad, batchSize: 32 };
    expect(errorsStillTrue(shown, trainRequest(fixedOne).errors ?? {})).toEqual({ epochs: shown.epochs });
    expect(errorsStillTrue(shown, trainRequest({ ...fixedOne, epochs: 2 }).errors ?? {})).toEqual({});
  });

  it('shows no new error before Start, and keeps an error it cannot judge', () => {
    const now = trainRequest({ ...form, seed: -1, batchSize: -5 }).errors!;
    expect(errorsStillTrue({ seed: 'old words' }, now)).toEqual({ seed: now.seed });
    expect(errorsStillTrue({ model: 'cannot read models/x.json' }, {}, ['model'])).toEqual({ model: 'cannot read models/x.json' });
  });
});

describe("a spec file's recipe, arriving after the file is read", () => {
  it('fills only the fields nobody changed since the file was chosen', () => {
    // The CI once trained every epoch: the step limit typed during a slow read was reset by the recipe.
    const chosenWith = { ...recipeValues('mlp', { data: 'fashion-mnist', device: 'cpu' }), model: 'models/narrow-cnn.json' };
    const now = { ...chosenWith, maxSteps: 20, batchSize: 96 };
    const recipe = recipeValues('models/narrow-cnn.json', { data: 'fashion-mnist', device: 'cpu' }, 'cnn');
    const taken = recipeOverUntouched(recipe, chosenWith, now);
    expect(taken.maxSteps).toBeUndefined();
    expect(taken.batchSize).toBeUndefined();
    expect(taken.lr).toBe(recipe.lr);
    expect({ ...now, ...taken }).toEqual({ ...recipe, maxSteps: 20, batchSize: 96 });
    expect(recipe.lr).not.toBe(chosenWith.lr); // the cnn recipe differs from the mlp one the form held, so the fill is seen
  });
});
