// Human-facing renderings of Session fields: masked phones, short prompts, durations.
import { DURATION_PATTERN } from './patterns.ts';

/** +14155550123 → +1415•••0123 (keeps the first 5 and last 4 characters). */
export function maskPhone(phone: string): string {
  const digits = phone.replace(/^whatsapp:/, '');
  if (digits.length <= 9) return `${digits.slice(0, 2)}•••${digits.slice(-2)}`;
  return `${digits.slice(0, 5)}•••${digits.slice(-4)}`;
}

/** First line of the prompt, whitespace collapsed, cut to max characters with an ellipsis. */
export function previewPrompt(prompt: string, max = 40): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/** 192_000 → "3m12s"; 3_725_000 → "1h2m5s"; under a second → "0s". */
export function formatDuration(ms: number): string {
  let seconds = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(seconds / 3600);
  seconds -= h * 3600;
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`;
}

/** "1h30m" → 5_400_000. Throws on anything that is not whole h/m/s units. */
export function parseDuration(text: string): number {
  if (!new RegExp(DURATION_PATTERN).test(text))
    throw new Error(`invalid duration "${text}" (use e.g. 90s, 30m, 1h30m)`);
  const unit = { h: 3_600_000, m: 60_000, s: 1000 } as const;
  let total = 0;
  for (const [, n, u] of text.matchAll(/([0-9]+)(h|m|s)/g)) total += Number(n) * unit[u as keyof typeof unit];
  return total;
}

/** Cuts text to max characters, ending with the marker when it had to cut. */
export const truncate = (text: string, max: number, marker = '…'): string =>
  text.length <= max ? text : `${text.slice(0, Math.max(0, max - marker.length))}${marker}`;
