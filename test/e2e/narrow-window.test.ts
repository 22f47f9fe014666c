// Every area at 1024x700 (issue 27 item 11) in Chromium: the page never scrolls sideways, no table is wider than
// its card (it wraps or scrolls inside it), the batch-size chart's "usable" label stays off the axis, and the
// sidebar starts collapsed below 1100 px, toggles, and remembers the choice.
import path from 'node:path';

import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';

import { areas } from '../../src-renderer/areas';
import { SIDEBAR_STORAGE_KEY } from '../../src-renderer/composables/useSidebar';
import { fillEveryArea, serveInChromium, SHOTS } from '../helpers/e2e';

const NARROW = { width: 1024, height: 700 };

const fx = serveInChromium({
  timeoutMs: 120_000,
  prepare: fillEveryArea,
});

/** What overflows sideways: the page itself, and each table wider than the card that holds it. */
function overflow(page: Page) {
  return page.evaluate(() => {
    const root = document.scrollingElement!;
    const tables = Array.from(document.querySelectorAll('table'))
      .filter((t) => t.offsetParent !== null)
      .flatMap((t) => {
        const card = t.closest('.card') ?? t.closest('main')!;
        const tr = t.getBoundingClientRect();
        const cr = card.getBoundingClientRect();
        // Wider than the card, unless a box inside the card scrolls it (then the page stays put).
        let box: HTMLElement | null = t.parentElement;
        while (box && box !== card && getComputedStyle(box).overflowX !== 'auto' && getComputedStyle(box).overflowX !== 'scroll') box = box.parentElement;
        const scrolled = box !== null && box !== card;
        return tr.width > cr.width + 1 && !scrolled ? [`${t.getAttribute('data-testid') ?? t.className}: ${Math.round(tr.width)} > ${Math.round(cr.width)}`] : [];
      });
    // A cell whose content runs past its edge (a fixed-layout column too narrow for a word) is cut off too.
    const cells = Array.from(document.querySelectorAll('td, th'))
      .filter((c) => (c as HTMLElement).offsetParent !== null && c.scrollWidth > c.clientWidth + 1)
      .map((c) => `${c.closest('table')?.getAttribute('data-testid') ?? 'table'}: "${(c.textContent ?? '').trim().slice(0, 40)}" ${c.scrollWidth} > ${c.clientWidth}`);
    const main = document.querySelector('main')!;
    return { page: root.scrollWidth - root.clientWidth, main: main.scrollWidth - main.clientWidth, tables, cells };
  });
}

/**
 * The area as a person at 1024x700 sees it, one window at a time (the shell scrolls inside main, so a full-page
 * shot would stop at the window): name-1.png, name-2.png, … at most `pages` of them.
 */
async function shoot(page: Page, name: string, pages = 6): Promise<void> {
  const scrollable = await page.evaluate(() => document.querySelector('main')!.scrollHeight - document.querySelector('main')!.clientHeight);
  const step = NARROW.height - 100;
  for (let i = 0; i < pages && i * step <= Math.max(0, scrollable) + step - 1; i++) {
    await page.evaluate((top) => document.querySelector('main')!.scrollTo(0, top), i * step);
    await page.screenshot({ path: path.join(SHOTS, `${name}-${i + 1}.png`) });
  }
  await page.evaluate(() => document.querySelector('main')!.scrollTo(0, 0));
}

/** Opens what an area shows beyond its first view: a run and a comparison, a past optimisation, a report. */
async function openContent(page: Page, area: string): Promise<void> {
  if (area === 'runs') {
    await page.getByTestId('runs-table').waitFor();
    const rows = page.locator('[data-testid^="run-2"]');
    await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(2);
    // The run's name, as a person clicks it: the row's middle may be a link (an optimisation's, to its card).
    await rows.first().getByTestId('run-name').click();
    await page.getByTestId('run-detail').waitFor();
    for (const i of [0, 1]) await rows.nth(i).locator('[data-testid^="pick-"]').check();
    await page.getByTestId('compare-start').click();
    await page.getByTestId('compare-differences').waitFor();
  }
  if (area === 'datasets') await page.getByTestId('dataset-iris').waitFor();
  if (area === 'benchmarks') await page.getByTestId('benchmark-findings').waitFor();
  if (area === 'optimise') {
    await page.locator('tr[data-testid^="opt-past-"]').first().click();
    await page.getByTestId('opt-trials').waitFor();
  }
  if (area === 'reports') {
    await page.locator('[data-testid^="report-0001"]').first().click();
  }
  await page.waitForTimeout(400);
}

describe('at 1024x700', () => {
  it('no area overflows the page sideways and no table its card, sidebar collapsed (as it starts) or expanded', async () => {
    const page = await fx.browser.newPage({ viewport: NARROW });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(fx.serve.url);
    const nav = page.getByTestId('nav');
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('true');
    expect((await nav.boundingBox())!.width).toBeLessThanOrEqual(72);
    for (const sidebar of ['collapsed', 'expanded']) {
      if (sidebar === 'expanded') await page.getByTestId('nav-toggle').click();
      await expect.poll(() => nav.getAttribute('data-collapsed')).toBe(String(sidebar === 'collapsed'));
      for (const area of areas) {
        await page.getByTestId(`nav-${area.name}`).click();
        await page.getByTestId(`area-${area.name}`).waitFor();
        await expect.poll(() => page.locator('h1').first().innerText()).toBe(area.title);
        await openContent(page, area.name);
        expect(await overflow(page), `${area.name}, sidebar ${sidebar}`).toEqual({ page: 0, main: 0, tables: [], cells: [] });
        await shoot(page, `narrow-${sidebar}-${area.name}`);
      }
    }
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('keeps the batch-size table in its card and the "usable" label off the axis', async () => {
    const page = await fx.browser.newPage({ viewport: NARROW });
    await page.goto(fx.serve.url);
    await page.getByTestId('nav-batch-size').click();
    await page.getByTestId('bs-model').selectOption('mlp');
    await page.getByTestId('bs-memory-limit').fill('32');
    await page.getByTestId('bs-steps').fill('3');
    await page.getByTestId('bs-start').click();
    await page.getByTestId('bs-verdict').waitFor({ timeout: 60_000 });
    await page.waitForTimeout(500);
    expect(await overflow(page), 'sidebar collapsed').toEqual({ page: 0, main: 0, tables: [], cells: [] });
    // The title stays on one line beside its lead.
    expect((await page.locator('h1').first().boundingBox())!.height).toBeLessThan(40);
    await page.getByTestId('nav-toggle').click();
    await expect.poll(() => page.getByTestId('nav').getAttribute('data-collapsed')).toBe('false');
    await page.waitForTimeout(500);
    expect(await overflow(page), 'sidebar expanded').toEqual({ page: 0, main: 0, tables: [], cells: [] });
    await page.getByTestId('batch-size-chart').scrollIntoViewIfNeeded();
    const box = (await page.getByTestId('batch-size-chart').boundingBox())!;
    await page.screenshot({ path: path.join(SHOTS, 'narrow-batch-size-chart.png'), clip: { x: box.x, y: box.y, width: box.width, height: box.height } });
    await shoot(page, 'narrow-batch-size-result');
    await page.close();
  }, 90_000);

  it('toggles the sidebar and remembers the choice across a reload', async () => {
    const page = await fx.browser.newPage({ viewport: NARROW });
    await page.goto(fx.serve.url);
    const nav = page.getByTestId('nav');
    const toggle = page.getByTestId('nav-toggle');
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('true');
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    // Collapsed: an icon named by the full title, for a screen reader and as a tooltip (issue 41: the same name as expanded).
    expect(await page.getByTestId('nav-batch-size').getAttribute('title')).toBe('Batch size');
    expect(await page.getByTestId('nav-batch-size').getAttribute('aria-label')).toBe('Batch size');

    await toggle.click();
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('false');
    expect(await page.getByTestId('nav-batch-size').innerText()).toBe('Batch size');
    expect(await page.evaluate((k) => localStorage.getItem(k), SIDEBAR_STORAGE_KEY)).toBe('expanded');
    expect(await overflow(page)).toEqual({ page: 0, main: 0, tables: [], cells: [] });
    await page.screenshot({ path: path.join(SHOTS, 'narrow-sidebar-expanded.png') });

    await page.reload();
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('false');
    await toggle.click();
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('true');
    await page.reload();
    await expect.poll(() => nav.getAttribute('data-collapsed')).toBe('true');
    // The order people work in: Runs right below the Dashboard.
    const order = await page.locator('nav a').evaluateAll((links) => links.map((a) => a.getAttribute('data-testid')));
    expect(order.slice(0, 2)).toEqual(['nav-dashboard', 'nav-runs']);
    await page.close();

    // A wide window starts expanded when nothing was chosen.
    const wide = await fx.browser.newPage({ viewport: { width: 1440, height: 900 } });
    await wide.goto(fx.serve.url);
    await expect.poll(() => wide.getByTestId('nav').getAttribute('data-collapsed')).toBe('false');
    await wide.close();
  }, 60_000);
});
