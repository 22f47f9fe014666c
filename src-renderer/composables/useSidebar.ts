import { onScopeDispose, ref } from 'vue';

/** Below this window width the sidebar starts collapsed, unless the person chose otherwise before. */
export const SIDEBAR_COLLAPSE_BELOW_PX = 1100;
/** Where the person's choice is remembered ('collapsed' or 'expanded'). */
export const SIDEBAR_STORAGE_KEY = 'trainbench.sidebar';

/** Collapsed or not: the remembered choice when there is one, else by the window's width. */
export function sidebarStartsCollapsed(saved: string | null, windowWidth: number): boolean {
  if (saved === 'collapsed') return true;
  if (saved === 'expanded') return false;
  return windowWidth < SIDEBAR_COLLAPSE_BELOW_PX;
}

/** localStorage when the page may use it (a sandboxed or private page may refuse). */
function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/**
 * The sidebar's collapsed state: starts from the remembered choice or the window's width, follows the
 * width while the person has not chosen, and remembers a toggle.
 */
export function useSidebar(options: { storageKey?: string } = {}) {
  const key = options.storageKey ?? SIDEBAR_STORAGE_KEY;
  const saved = () => storage()?.getItem(key) ?? null;
  const collapsed = ref(sidebarStartsCollapsed(saved(), window.innerWidth));

  const narrow = window.matchMedia?.(`(max-width: ${SIDEBAR_COLLAPSE_BELOW_PX - 1}px)`);
  const follow = (e: MediaQueryListEvent) => {
    if (saved() === null) collapsed.value = e.matches;
  };
  narrow?.addEventListener('change', follow);
  onScopeDispose(() => narrow?.removeEventListener('change', follow));

  function toggle(): void {
    collapsed.value = !collapsed.value;
    try {
      storage()?.setItem(key, collapsed.value ? 'collapsed' : 'expanded');
    } catch {
      // A full or refused storage: the toggle still works for this page.
    }
  }

  return { collapsed, toggle };
}
