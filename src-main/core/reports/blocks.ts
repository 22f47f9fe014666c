// Generated blocks in a report's markdown: parsing, and the merge that
// regenerate does (fresh blocks in, the person's text outside them kept).
import { createHash } from 'node:crypto';

import { blockBegin, blockEnd } from '../../api/reports';

export type Segment = { kind: 'text'; text: string } | { kind: 'block'; id: string; body: string };

const BEGIN = /^[ \t]*<!-- tb:begin ([a-z0-9][a-z0-9.-]*) -->[ \t]*$/;
const END = /^[ \t]*<!-- tb:end ([a-z0-9][a-z0-9.-]*) -->[ \t]*$/;

/** The body's fingerprint, kept in report.json so regenerate can tell a block the person edited. */
export function bodyHash(body: string): string {
  return createHash('sha256').update(body.replace(/\r\n/g, '\n').trim()).digest('hex').slice(0, 16);
}

export function renderBlock(id: string, body: string): string {
  return `${blockBegin(id)}\n${body.replace(/\n+$/, '')}\n${blockEnd(id)}\n`;
}

/**
 * Splits markdown into the person's text and generated blocks. A begin marker
 * without its end (or a nested one) stays text, and `problems` says so.
 */
export function parseSegments(markdown: string): { segments: Segment[]; problems: string[] } {
  const lines = markdown.split('\n');
  const segments: Segment[] = [];
  const problems: string[] = [];
  let text: string[] = [];
  const flushText = () => {
    if (text.length) segments.push({ kind: 'text', text: text.join('\n') });
    text = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const begin = BEGIN.exec(lines[i]);
    if (!begin) {
      text.push(lines[i]);
      continue;
    }
    const id = begin[1];
    let end = -1;
    for (let j = i + 1; j < lines.length; j++) {
      if (BEGIN.test(lines[j])) break;
      const m = END.exec(lines[j]);
      if (m) {
        if (m[1] === id) end = j;
        break;
      }
    }
    if (end < 0) {
      problems.push(`the marker "${blockBegin(id)}" (line ${i + 1}) has no matching "${blockEnd(id)}" before the next marker; it was kept as your text`);
      text.push(lines[i]);
      continue;
    }
    flushText();
    segments.push({ kind: 'block', id, body: lines.slice(i + 1, end).join('\n') });
    i = end; // the line break after the end marker belongs to the block
  }
  flushText();
  return { segments, problems };
}

export function joinSegments(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) {
    if (s.kind === 'text') out += s.text + '\n';
    else out += renderBlock(s.id, s.body);
  }
  return out.replace(/\n+$/, '\n');
}

export interface MergeResult {
  markdown: string;
  /** What the merge did that the person should know: edits inside blocks replaced, blocks removed or not re-added. */
  notes: string[];
}

/**
 * The existing report with every block's body replaced by the fresh one. Text
 * outside blocks is kept as it is. A block the fresh report no longer has is
 * removed; a fresh block the person deleted (it was generated last time) stays
 * deleted; a fresh block new since last time goes in after the block before it,
 * with the text the generator puts before it (its heading).
 */
export function mergeRegenerated(existing: string, fresh: string, lastHashes: Readonly<Record<string, string>>): MergeResult {
  const old = parseSegments(existing);
  const next = parseSegments(fresh).segments;
  const notes = [...old.problems];
  const freshBodies = new Map<string, string>();
  for (const s of next) if (s.kind === 'block') freshBodies.set(s.id, s.body);

  const merged: Segment[] = [];
  for (const s of old.segments) {
    if (s.kind === 'text') {
      merged.push(s);
      continue;
    }
    const body = freshBodies.get(s.id);
    if (body === undefined) {
      notes.push(`block "${s.id}" is no longer generated from these runs and was removed`);
      continue;
    }
    const last = lastHashes[s.id];
    if (last !== undefined && last !== bodyHash(s.body) && bodyHash(s.body) !== bodyHash(body)) {
      notes.push(`your edits inside the generated block "${s.id}" were replaced (write prose outside the tb:begin/tb:end markers to keep it)`);
    }
    merged.push({ kind: 'block', id: s.id, body });
  }

  const present = new Set(merged.flatMap((s) => (s.kind === 'block' ? [s.id] : [])));
  for (let i = 0; i < next.length; i++) {
    const s = next[i];
    if (s.kind !== 'block' || present.has(s.id)) continue;
    if (lastHashes[s.id] !== undefined) {
      notes.push(`block "${s.id}" was deleted by hand and is not added back (delete the report and generate it again to get it)`);
      continue;
    }
    const lead = i > 0 && next[i - 1].kind === 'text' ? [next[i - 1]] : [];
    let after = -1;
    for (let j = i - 1; j >= 0 && after < 0; j--) {
      const prev = next[j];
      if (prev.kind === 'block' && present.has(prev.id)) after = merged.findIndex((m) => m.kind === 'block' && m.id === prev.id);
    }
    merged.splice(after + 1, 0, ...lead, s);
    present.add(s.id);
    notes.push(`block "${s.id}" is new in this version of the report and was added`);
  }
  return { markdown: joinSegments(merged), notes };
}

/** Every block's fingerprint, to store beside the report. */
export function blockHashes(markdown: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of parseSegments(markdown).segments) if (s.kind === 'block') out[s.id] = bodyHash(s.body);
  return out;
}
