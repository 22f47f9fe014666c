import { stripBlockMarkers } from '@api/reports';
import { printableDeep } from '@api/shell-word';
import MarkdownIt from 'markdown-it';

/** A figure of the open report as the preview knows it: its data: URL, still loading, or why it cannot be shown. */
export type FigureState = { url: string } | { loading: true } | { error: string };

type Figures = Readonly<Record<string, FigureState>>;

/**
 * Raw HTML off (a report never runs markup: `<script>`, `<img onerror>` and the like
 * come out as text), linkify off (only links the author wrote are links).
 */
const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
const escape = md.utils.escapeHtml;
const defaultImage = md.renderer.rules.image!;
const defaultLinkOpen = md.renderer.rules.link_open ?? ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));

/** "./phase-breakdown.svg" and "phase-breakdown.svg" name the same figure beside the markdown. */
function figureName(src: string): string {
  return src.replace(/^\.\//, '');
}

/**
 * Images show only the report's own figures, as data: URLs of the SVG text the
 * workspace holds; any other image (a web address, a file elsewhere) is named
 * in text instead of fetched, so a preview never reaches out of the app.
 */
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx];
  const src = String(token.attrGet('src') ?? '');
  const alt = self.renderInlineAsText(token.children ?? [], options, env);
  const state = (env?.figures as Figures | undefined)?.[figureName(src)];
  if (state && 'url' in state) {
    token.attrSet('src', state.url);
    return defaultImage(tokens, idx, options, env, self);
  }
  const why = !state ? 'not a figure of this report' : 'loading' in state ? 'loading…' : state.error;
  return `<span class="figure-missing" role="img" aria-label="${escape(alt)}">[figure ${escape(src)}: ${escape(why)}]</span>`;
};

/** Links open outside the app (Electron sends them to the system browser), never in its own window. */
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet('target', '_blank');
  tokens[idx].attrSet('rel', 'noopener noreferrer');
  return defaultLinkOpen(tokens, idx, options, env, self);
};

/** The figure's SVG text as a data: URL; an <img> never runs an SVG's scripts. */
export function svgDataUrl(svg: string): string {
  return `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
}

/**
 * A report's markdown as HTML safe for `v-html`: the generated-block markers
 * dropped (a code host hides them as comments), raw HTML escaped, figures inlined.
 */
export function renderReport(markdown: string, figures: Figures): string {
  // Escaped after rendering too: markdown-it decodes `&#x202E;` and `%E2%80%AE` in link text into the marks
  // themselves (re-attack 11), after the answer's own text was escaped. Tabs and newlines stay.
  return printableDeep(md.render(stripBlockMarkers(markdown), { figures }));
}
