import { ref } from 'vue';

import { errorText } from './error-text';

/**
 * The refresh pattern every list store repeats: `loading` while a load runs, the
 * previous `error` cleared when it starts, and a failure kept as the text the UI shows.
 */
export function useLoader<A extends unknown[]>(load: (...args: A) => Promise<void>) {
  const loading = ref(false);
  /** A message a person can act on, with the error code; null after a load that worked. */
  const error = ref<string | null>(null);

  async function run(...args: A): Promise<void> {
    loading.value = true;
    error.value = null;
    try {
      await load(...args);
    } catch (err) {
      error.value = errorText(err);
    } finally {
      loading.value = false;
    }
  }

  return { loading, error, run };
}
