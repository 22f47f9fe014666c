// @vitest-environment happy-dom
// The sidebar's collapsed state (issue 27 item 11): remembered choice first, else the window's width; a toggle is remembered.
import { afterEach, describe, expect, it } from 'vitest';
import { effectScope } from 'vue';

import { SIDEBAR_COLLAPSE_BELOW_PX, SIDEBAR_STORAGE_KEY, sidebarStartsCollapsed, useSidebar } from '../../src-renderer/composables/useSidebar';

afterEach(() => localStorage.clear());

describe('sidebar', () => {
  it('starts collapsed below the threshold unless the person chose, and as they chose otherwise', () => {
    expect(sidebarStartsCollapsed(null, SIDEBAR_COLLAPSE_BELOW_PX - 1)).toBe(true);
    expect(sidebarStartsCollapsed(null, 1024)).toBe(true);
    expect(sidebarStartsCollapsed(null, SIDEBAR_COLLAPSE_BELOW_PX)).toBe(false);
    expect(sidebarStartsCollapsed('expanded', 1024)).toBe(false);
    expect(sidebarStartsCollapsed('collapsed', 1920)).toBe(true);
    // Anything else stored (an old or edited value) counts as no choice.
    expect(sidebarStartsCollapsed('sideways', 1920)).toBe(false);
  });

  it('remembers a toggle in localStorage, and a new page starts from it', () => {
    const scope = effectScope();
    const first = scope.run(() => useSidebar())!;
    const start = first.collapsed.value;
    first.toggle();
    expect(first.collapsed.value).toBe(!start);
    expect(localStorage.getItem(SIDEBAR_STORAGE_KEY)).toBe(start ? 'expanded' : 'collapsed');
    scope.stop();
    const again = effectScope().run(() => useSidebar())!;
    expect(again.collapsed.value).toBe(!start);
  });
});
