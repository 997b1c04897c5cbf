// The scripted agent's grammar (README "Scripted agent"). Pure: prompt → steps.

export type Step =
  | { kind: 'progress'; text: string }
  | { kind: 'write'; path: string; content: string }
  | { kind: 'tool'; tool: string; input: Record<string, unknown> }
  | { kind: 'ask'; question: string; options: string[] }
  | { kind: 'sleep'; ms: number }
  | { kind: 'fail'; message: string }
  | { kind: 'say'; text: string }
  | { kind: 'raw'; text: string };

export const SCRIPT_PREFIX = 'script:';
const MAX_SLEEP_MS = 10 * 60_000;

/** `\n` and `\t` in write contents and texts become a newline and a tab; `\\` a backslash. */
const unescape = (text: string) => text.replace(/\\(n|t|\\)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : '\\'));

function parseJsonObject(text: string): Record<string, unknown> {
  if (!text.trim()) return {};
  try {
    const value: unknown = JSON.parse(text);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
    return { value };
  } catch {
    return { raw: text };
  }
}

export function parseStep(line: string): Step | undefined {
  const trimmed = line.trim();
  if (!trimmed) return undefined;
  const match = /^([a-z]+):\s?(.*)$/s.exec(trimmed);
  const [keyword, rest] = match ? [match[1]!, match[2]!] : ['', trimmed];
  switch (keyword) {
    case 'progress':
      return { kind: 'progress', text: rest.trim() };
    case 'write': {
      const eq = rest.indexOf('=');
      if (eq < 0) return { kind: 'raw', text: trimmed };
      return { kind: 'write', path: rest.slice(0, eq).trim(), content: unescape(rest.slice(eq + 1).replace(/^ /, '')) };
    }
    case 'tool': {
      const [tool = '', ...input] = rest.trim().split(/\s+(.*)/s);
      return tool ? { kind: 'tool', tool, input: parseJsonObject(input.join('')) } : { kind: 'raw', text: trimmed };
    }
    case 'ask': {
      const [question = '', ...options] = rest.split('|').map((p) => p.trim());
      return { kind: 'ask', question, options: options.filter(Boolean) };
    }
    case 'sleep': {
      const ms = Number(rest.trim());
      return Number.isFinite(ms) && ms >= 0 ? { kind: 'sleep', ms: Math.min(ms, MAX_SLEEP_MS) } : { kind: 'raw', text: trimmed };
    }
    case 'fail':
      return { kind: 'fail', message: rest.trim() || 'scripted failure' };
    case 'say':
      return { kind: 'say', text: unescape(rest.trim()) };
    default:
      return { kind: 'raw', text: trimmed };
  }
}

/** The steps of a `script:` prompt, or the built-in demo for any other prompt. */
export function parseScenario(prompt: string): Step[] {
  if (!prompt.trimStart().startsWith(SCRIPT_PREFIX)) return demoScenario(prompt);
  const body = prompt.trimStart().slice(SCRIPT_PREFIX.length);
  return body.split(/\r?\n/).map(parseStep).filter((s): s is Step => s !== undefined);
}

export function demoScenario(prompt: string): Step[] {
  const line = prompt.replace(/\s+/g, ' ').trim().slice(0, 200);
  return [
    { kind: 'progress', text: 'Reading the repository' },
    { kind: 'sleep', ms: 300 },
    { kind: 'write', path: 'TETHER_DEMO.md', content: `# Tether demo\n\nRequested from the phone: ${line}\n` },
    { kind: 'say', text: 'Added TETHER_DEMO.md with your request (scripted demo agent; set ANTHROPIC_API_KEY for Claude).' },
  ];
}

/** A readable plan for plan mode: the steps as a numbered list. */
export function describeScenario(steps: Step[]): string {
  const describe = (s: Step): string => {
    switch (s.kind) {
      case 'write': return `write ${s.path}`;
      case 'tool': return `use ${s.tool}`;
      case 'ask': return `ask "${s.question}"`;
      case 'sleep': return `wait ${s.ms} ms`;
      case 'progress': case 'say': return s.text;
      case 'fail': return `fail: ${s.message}`;
      case 'raw': return s.text;
    }
  };
  return steps.map((s, i) => `${i + 1}. ${describe(s)}`).join('\n');
}
