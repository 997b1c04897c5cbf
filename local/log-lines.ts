// Renders a component's output line for one shared terminal: pino JSON becomes
// "12:00:01 relay      INFO  message key=value", anything else is shown as it is.
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'v']);
const COLORS: Record<string, string> = { WARN: '\x1b[33m', ERROR: '\x1b[31m', FATAL: '\x1b[31m' };

export function formatLine(component: string, line: string, color = process.stdout.isTTY === true): string {
  const tag = component.slice(0, 28).padEnd(12);
  let entry: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed && typeof parsed === 'object' && 'msg' in parsed) entry = parsed as Record<string, unknown>;
  } catch {
    entry = undefined;
  }
  if (!entry) return `${new Date().toISOString().slice(11, 19)} ${tag} ${line}`;
  const time = new Date(typeof entry.time === 'number' ? entry.time : Date.now()).toISOString().slice(11, 19);
  const level = LEVELS[Number(entry.level)] ?? 'INFO';
  const extras = Object.entries(entry)
    .filter(([k]) => !HIDDEN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const text = `${time} ${tag} ${level.padEnd(5)} ${String(entry.msg)}${extras ? ` ${extras}` : ''}`;
  return color && COLORS[level] ? `${COLORS[level]}${text}\x1b[0m` : text;
}
