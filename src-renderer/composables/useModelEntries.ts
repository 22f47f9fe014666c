import type { ModelEntry } from '@api/model-files';
import { shallowRef } from 'vue';

import { useApiClient } from '../transport/client-instance';

/**
 * models.list for a form that takes workspace spec files (the built-ins are offered without it, so a
 * failure leaves the list empty); `useSaved` lists again after the form's editor saved a spec.
 */
export function useModelEntries() {
  const entries = shallowRef<ModelEntry[]>([]);
  async function load(): Promise<void> {
    entries.value = await useApiClient()
      .call('models.list', {})
      .catch(() => []);
  }
  return { entries, load };
}
