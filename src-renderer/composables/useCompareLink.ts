import { storeToRefs } from 'pinia';
import { watch } from 'vue';
import { useRoute, useRouter } from 'vue-router';

import { useRunsStore } from '../stores/runs';

/** Runs a pasted link may compare at most. */
const MAX_LINKED_COMPARE = 8;

/**
 * The Runs area's comparison in its URL, #/runs?compare=<id>,<id>: a reload or a pasted link shows it again (a UI
 * walk lost it on reload), and an open comparison follows the ticks (unticked down to one, it closes). Only while
 * the route is the area's. Returns what shows the linked comparison, for the area's mount.
 */
export function useCompareLink(): () => void {
  const route = useRoute();
  const router = useRouter();
  const store = useRunsStore();
  const { picked, compared } = storeToRefs(store);
  const here = () => route.name === 'runs';
  const linked = (): string[] => (typeof route.query.compare === 'string' ? route.query.compare.split(',').filter(Boolean).slice(0, MAX_LINKED_COMPARE) : []);
  const comparedIds = () => compared.value.map((r) => r.summary.id).join(',');

  watch(comparedIds, (ids) => {
    if (!here() || ids === linked().join(',')) return;
    const rest = Object.fromEntries(Object.entries(route.query).filter(([k]) => k !== 'compare'));
    void router.replace({ query: ids ? { ...rest, compare: ids } : rest });
  });
  function showLinked(): void {
    const ids = linked();
    if (!here() || ids.length < 2 || ids.join(',') === comparedIds()) return;
    picked.value = ids;
    void store.compare();
  }
  watch(() => route.query.compare, showLinked);
  watch(
    () => picked.value.join(','),
    (ids) => {
      if (!compared.value.length || ids === comparedIds()) return;
      if (picked.value.length >= 2) void store.compare();
      else store.closeCompare();
    },
  );
  return showLinked;
}
