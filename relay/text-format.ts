// Small pieces of the phone's words that relay/text.ts, request-text.ts and result-text.ts share.
import { formatDuration } from '../common/session/display.ts';

/** Short handle the user sees: the random tail of the Session name ("7f3a"). */
export const shortId = (name: string) => name.slice(name.lastIndexOf('-') + 1);

/** "1 h 5 min 3 s" */
export const humanDuration = (ms: number) =>
  formatDuration(ms)
    .replace(/(\d+)h/, '$1 h ')
    .replace(/(\d+)m/, '$1 min ')
    .replace(/(\d+)s$/, '$1 s')
    .trim();
