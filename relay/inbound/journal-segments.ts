// The inbound journal's files: numbered segments of JSON lines in one folder, read in order.
// A segment starts with a snapshot of what was open when it was made, so once a newer segment is
// synced every older one can go. docs/relay.md, "Journal".
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InboundMessage } from './message.ts';
import type { Route } from './router.ts';

/** What a journal holds: an inbound message, or another record with an id (a GitHub delivery). */
export interface Journaled {
  id: string;
}

export type Entry<M extends Journaled = InboundMessage> =
  { t: 'in'; m: M } | { t: 'route'; id: string; r: Route } | { t: 'done'; id: string };

/** A message the journal holds: not yet done, with the route it was given if it got that far. */
export interface JournalRecord<M extends Journaled = InboundMessage> {
  message: M;
  route?: Route;
}

/** The single file journals wrote before segments; read first, removed with the first compaction. */
const LEGACY_FILE = 'inbound.jsonl';
const SEGMENT = /^inbound-(\d+)\.jsonl$/;

export const segmentName = (n: number) => `inbound-${String(n).padStart(8, '0')}.jsonl`;

/** The folder's segments, oldest first, as [number, file name]; the legacy file counts as number 0. */
export function listSegments(dir: string): Array<[number, string]> {
  const names = readdirSync(dir);
  const numbered = names.flatMap((name): Array<[number, string]> => {
    const match = SEGMENT.exec(name);
    return match ? [[Number(match[1]), name]] : [];
  });
  const legacy: Array<[number, string]> = names.includes(LEGACY_FILE) ? [[0, LEGACY_FILE]] : [];
  return [...legacy, ...numbered.sort((a, b) => a[0] - b[0])];
}

/** Replays every segment in order into the open messages (a torn line, never acknowledged, is skipped). */
export function readSegments<M extends Journaled>(
  dir: string,
  segments: Array<[number, string]>,
): Map<string, JournalRecord<M>> {
  const open = new Map<string, JournalRecord<M>>();
  for (const [, name] of segments) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      let entry: Entry<M>;
      try {
        entry = JSON.parse(line) as Entry<M>;
      } catch {
        continue; // the torn last line of a crash mid-write: it was never acknowledged
      }
      if (entry.t === 'in') open.set(entry.m.id, { message: entry.m });
      else if (entry.t === 'route' && open.has(entry.id)) open.get(entry.id)!.route = entry.r;
      else if (entry.t === 'done') open.delete(entry.id);
    }
  }
  return open;
}

/** The lines that bring a new segment to what is open now. */
export function snapshot<M extends Journaled>(records: Iterable<JournalRecord<M>>): { text: string; lines: number } {
  const entries = [...records].flatMap((r): Array<Entry<M>> => [
    { t: 'in', m: r.message },
    ...(r.route ? [{ t: 'route' as const, id: r.message.id, r: r.route }] : []),
  ]);
  return { text: entries.map((e) => `${JSON.stringify(e)}\n`).join(''), lines: entries.length };
}
