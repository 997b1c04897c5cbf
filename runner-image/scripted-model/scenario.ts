// The scripted model's grammar (README "Scripted model"). Pure: prompt → steps.

export type Step =
  | { kind: 'progress'; text: string }
  | { kind: 'write'; path: string; content: string }
  | { kind: 'tool'; tool: string; json: string }
  | { kind: 'ask'; question: string; options: string[] }
  | { kind: 'sleep'; ms: number }
  | { kind: 'fail'; message: string }
  | { kind: 'error'; status: number }
  | { kind: 'plan'; text: string }
  | { kind: 'say'; text: string };

export const SCRIPT_PREFIX = 'script:';
const MAX_SLEEP_MS = 10 * 60_000;

/** `\n` and `\t` in write contents and texts become a newline and a tab; `\\` a backslash. */
const unescape = (text: string) =>
  text.replace(/\\(n|t|\\)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : '\\'));

/** One line of a scenario; a line that is no step is text the model says as it is. */
export function parseStep(line: string): Step | undefined {
  const trimmed = line.trim();
  if (!trimmed) return undefined;
  const match = /^([a-z]+):\s?(.*)$/s.exec(trimmed);
  const [keyword, rest] = match ? [match[1]!, match[2]!] : ['', trimmed];
  const said: Step = { kind: 'say', text: trimmed };
  switch (keyword) {
    case 'progress':
      return { kind: 'progress', text: rest.trim() };
    case 'write': {
      const eq = rest.indexOf('=');
      if (eq < 0) return said;
      return { kind: 'write', path: rest.slice(0, eq).trim(), content: unescape(rest.slice(eq + 1).replace(/^ /, '')) };
    }
    case 'tool': {
      const [tool = '', json = ''] = rest.trim().split(/\s+(.*)/s);
      return tool ? { kind: 'tool', tool, json: json.trim() || '{}' } : said;
    }
    case 'ask': {
      const [question = '', ...options] = rest.split('|').map((p) => p.trim());
      return { kind: 'ask', question, options: options.filter(Boolean) };
    }
    case 'sleep': {
      const ms = Number(rest.trim());
      return Number.isFinite(ms) && ms >= 0 ? { kind: 'sleep', ms: Math.min(ms, MAX_SLEEP_MS) } : said;
    }
    case 'fail':
      return { kind: 'fail', message: rest.trim() || 'scripted failure' };
    case 'error': {
      const status = Number(rest.trim());
      return Number.isInteger(status) && status >= 400 && status <= 599 ? { kind: 'error', status } : said;
    }
    case 'plan':
      return { kind: 'plan', text: unescape(rest.trim()) };
    case 'say':
      return { kind: 'say', text: unescape(rest.trim()) };
    default:
      return said;
  }
}

export const isScenario = (prompt: string) => prompt.trimStart().startsWith(SCRIPT_PREFIX);

/** The steps of a `script:` prompt, or the built-in demo for any other prompt. */
export function parseScenario(prompt: string): Step[] {
  if (!isScenario(prompt)) return demoScenario(prompt);
  const body = prompt.trimStart().slice(SCRIPT_PREFIX.length);
  return body
    .split(/\r?\n/)
    .map(parseStep)
    .filter((s): s is Step => s !== undefined);
}

export const DEMO_FILE = 'TETHER_DEMO.md';

export function demoScenario(prompt: string): Step[] {
  const line = prompt.replace(/\s+/g, ' ').trim().slice(0, 200);
  return [
    { kind: 'progress', text: 'Reading the repository' },
    { kind: 'write', path: DEMO_FILE, content: `# Tether demo\n\nRequested from the phone: ${line}\n` },
    { kind: 'say', text: `Added ${DEMO_FILE} with your request (scripted model; set ANTHROPIC_API_KEY for Claude).` },
  ];
}

/** The plan the model proposes in plan mode: its `plan:` step, else its steps as a numbered list. */
export function planText(steps: Step[]): string {
  const own = steps.find((s) => s.kind === 'plan');
  if (own) return own.text;
  const describe = (s: Step): string | undefined => {
    switch (s.kind) {
      case 'write':
        return `write ${s.path}`;
      case 'tool':
        return `use ${s.tool}`;
      case 'ask':
        return `ask "${s.question}"`;
      case 'progress':
      case 'say':
        return s.text;
      case 'fail':
        return `fail: ${s.message}`;
      default:
        return undefined;
    }
  };
  return steps
    .flatMap((s) => describe(s) ?? [])
    .map((line, i) => `${i + 1}. ${line}`)
    .join('\n');
}
