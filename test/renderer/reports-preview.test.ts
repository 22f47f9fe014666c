// @vitest-environment happy-dom
// Issue 13: the Reports preview renders markdown without ever running markup the markdown holds,
// shows only the report's own figures (as data: URLs), and hides the generated-block markers.
import { mount } from '@vue/test-utils';
import { afterEach, describe, expect, it } from 'vitest';
import { nextTick } from 'vue';

import ReportPreview from '../../src-renderer/components/reports/ReportPreview.vue';
import type { FigureState } from '../../src-renderer/view-models/render-report';
import { renderReport, svgDataUrl } from '../../src-renderer/view-models/render-report';

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="#4fb3ff"/></svg>';
const HOSTILE = [
  '# 1. A report someone sent me',
  '',
  '<script>window.__pwned = "script"</script>',
  '',
  '<img src="x" onerror="window.__pwned = \'onerror\'">',
  '',
  'Inline <b onmouseover="window.__pwned = 1">bold</b> and <iframe src="https://example.com"></iframe>.',
  '',
  '[a link that runs code](javascript:window.__pwned=1) and [one that is fine](https://perfetto.dev)',
  '',
  '![tracking pixel](https://tracker.example/pixel.png)',
  '',
  '![a data svg with a script](data:image/svg+xml,%3Csvg%20onload%3D%22alert(1)%22%3E)',
].join('\n');

declare global {
  interface Window {
    __pwned?: unknown;
  }
}

afterEach(() => {
  delete window.__pwned;
  document.body.innerHTML = '';
});

/** Every attribute of every element under root whose name starts with "on" (an event handler). */
function handlerAttributes(root: Element): string[] {
  return Array.from(root.querySelectorAll('*')).flatMap((el) => Array.from(el.attributes).filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => `${el.tagName}.${a.name}`));
}

describe('report preview', () => {
  it('shows raw HTML as text: no script, handler, frame or javascript: link reaches the page', async () => {
    const wrapper = mount(ReportPreview, { props: { markdown: HOSTILE, figures: {} }, attachTo: document.body });
    await nextTick();
    const root = wrapper.element as HTMLElement;
    expect(root.querySelectorAll('script, iframe, object, embed, b').length).toBe(0);
    expect(handlerAttributes(root)).toEqual([]);
    // The markup is there for the reader, as text.
    expect(root.textContent).toContain('<script>window.__pwned = "script"</script>');
    expect(root.textContent).toContain('<img src="x" onerror=');
    expect(root.querySelector('h1')?.textContent).toBe('1. A report someone sent me');
    // markdown-it refuses javascript: links (they stay text); web links open outside the app.
    const links = Array.from(root.querySelectorAll('a'));
    expect(links.map((a) => a.getAttribute('href'))).toEqual(['https://perfetto.dev']);
    expect(links[0].getAttribute('target')).toBe('_blank');
    expect(links[0].getAttribute('rel')).toBe('noopener noreferrer');
    // Images that are not the report's figures are named, never fetched.
    expect(root.querySelectorAll('img').length).toBe(0);
    expect(root.textContent).toContain('[figure https://tracker.example/pixel.png: not a figure of this report]');
    await new Promise((r) => setTimeout(r, 20));
    expect(window.__pwned).toBeUndefined();
    wrapper.unmount();
  });

  it("inlines the report's figures as data: URLs, and says which are loading or failed", () => {
    const figures: Record<string, FigureState> = {
      'phase-breakdown.svg': { url: svgDataUrl(SVG) },
      'throughput.svg': { loading: true },
      'memory-run-1.svg': { error: 'E_DATA: figure memory-run-1.svg of report 0001-x cannot be read: ENOENT' },
    };
    const markdown = [
      '![Time per step by phase](phase-breakdown.svg)',
      '',
      '![Samples per second](./throughput.svg)',
      '',
      '![Memory by kind](memory-run-1.svg)',
    ].join('\n');
    const host = document.createElement('div');
    host.innerHTML = renderReport(markdown, figures);
    const images = Array.from(host.querySelectorAll('img'));
    expect(images).toHaveLength(1);
    expect(images[0].getAttribute('alt')).toBe('Time per step by phase');
    const src = images[0].getAttribute('src') ?? '';
    expect(src.startsWith('data:image/svg+xml;charset=utf-8,')).toBe(true);
    expect(decodeURIComponent(src.slice(src.indexOf(',') + 1))).toBe(SVG);
    const missing = Array.from(host.querySelectorAll('.figure-missing')).map((e) => e.textContent);
    expect(missing).toEqual([
      '[figure ./throughput.svg: loading…]',
      '[figure memory-run-1.svg: E_DATA: figure memory-run-1.svg of report 0001-x cannot be read: ENOENT]',
    ]);
    expect(host.querySelectorAll('.figure-missing')[0].getAttribute('aria-label')).toBe('Samples per second');
  });

  it('drops the generated-block markers, as a code host hides them, and keeps what is between them', () => {
    const markdown = ['## Status', '', '<!-- tb:begin status -->', 'Generated from 1 run.', '<!-- tb:end status -->', '', 'My own line.'].join('\n');
    const html = renderReport(markdown, {});
    expect(html).not.toContain('tb:begin');
    expect(html).not.toContain('tb:end');
    expect(html).toContain('<p>Generated from 1 run.</p>');
    expect(html).toContain('<p>My own line.</p>');
  });

  it('shows the marks that character references and %-escapes in link text decode to escaped (re-attack 11)', () => {
    const markdown = ['# 3. GEN &#x202E;fdp.exe&#x202C; &#x2028;x', '', 'a&#8203;b &rlm; &#xE0001; &amp; &lt;', '', '<http://example.com/%E2%80%AEfdp.exe>'].join('\n');
    const html = renderReport(markdown, {});
    expect(html).toContain('<h1>3. GEN \\u202efdp.exe\\u202c \\u2028x</h1>');
    expect(html).toContain('a\\u200bb \\u200f \\U000e0001 &amp; &lt;');
    expect(html).toContain('example.com/\\u202efdp.exe');
    expect(html).not.toMatch(/[\u200b\u200f\u202c\u202e\u2028]/);
  });

  it('follows the markdown as it is edited', async () => {
    const wrapper = mount(ReportPreview, { props: { markdown: '# Title', figures: {} } });
    expect(wrapper.find('h1').text()).toBe('Title');
    await wrapper.setProps({ markdown: '# Title\n\n| a | b |\n| - | - |\n| 1 | 2 |' });
    expect(wrapper.findAll('td').map((td) => td.text())).toEqual(['1', '2']);
  });
});
