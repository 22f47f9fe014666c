import { useRoute, useRouter } from 'vue-router';

/**
 * The id of what an area shows, kept in its URL as `?<key>=<id>` (a reload or a pasted link shows it again):
 * `linked` reads it, `nameInUrl` writes it (replacing the entry; null drops it). Only while the route is the
 * area's own, so leaving it changes nothing.
 */
export function useQueryId(routeName: string, key: string) {
  const route = useRoute();
  const router = useRouter();
  const here = () => route.name === routeName;
  const linked = (): string | null => {
    const v = route.query[key];
    return typeof v === 'string' ? v : null;
  };
  function nameInUrl(id: string | null): void {
    if (!here() || id === linked()) return;
    const rest = Object.fromEntries(Object.entries(route.query).filter(([k]) => k !== key));
    void router.replace({ query: id === null ? rest : { ...rest, [key]: id } });
  }
  return { here, linked, nameInUrl };
}
