// Every `helm install|upgrade` command and every `--set` the chart's docs show renders with the
// real helm, as written: a documented value the chart refuses fails here, not on a user's cluster.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHART_DIR, HELM_SETUP_TIMEOUT, TEST_API_SERVER_CIDRS, helm, helmBin, withValueArgs } from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const DOCS = ['charts/tether/README.md', 'docs/chart.md', 'docs/troubleshooting.md'];
const VALUE_FLAGS = new Set(['--set', '--set-string', '--set-json', '-f', '--values']);

/** Shell words of one command line: single and double quotes, no expansion. */
export function shellWords(line: string): string[] {
  return [...line.matchAll(/(?:'[^']*'|"[^"]*"|[^\s'"]+)+/g)].map((m) =>
    m[0].replace(/'([^']*)'|"([^"]*)"/g, (_, single?: string, double?: string) => single ?? double ?? ''),
  );
}

/** The value flags (with their arguments) among `words`; a flag whose argument is elided (…) is left out. */
export function valueFlags(words: string[]): string[] {
  return words.flatMap((word, i) =>
    VALUE_FLAGS.has(word) && words[i + 1] && words[i + 1] !== '…' ? [word, words[i + 1]!] : [],
  );
}

/** `helm install|upgrade` lines of sh blocks (continuations joined, elided ones left out); prose spans with --set. */
export function documented(markdown: string): { commands: string[][]; fragments: string[][] } {
  const blocks = [...markdown.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.replace(/\\\n\s*/g, ' '));
  const commands = blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => shellWords(line.replace(/\s#.*$/, '')))
    // An elided command (…) points elsewhere for its values.
    .filter((words) => words[0] === 'helm' && ['install', 'upgrade'].includes(words[1]!) && !words.includes('…'));
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  const fragments = [...prose.matchAll(/`([^`\n]*--set[^`\n]*)`/g)]
    .map((m) => valueFlags(shellWords(m[1]!)))
    .filter((flags) => flags.length > 0);
  return { commands, fragments };
}

describe.each(DOCS)('%s', (path) => {
  const { commands, fragments } = documented(readFileSync(path, 'utf8'));

  // What `helm install` would look up in the cluster and `helm template` cannot.
  const lookedUp = ['--set', `networkPolicy.apiServer.cidrs={${TEST_API_SERVER_CIDRS.join(',')}}`];
  it.each(commands.map((words) => [words.join(' '), words]))('renders %s', async (_, words) => {
    const flags = [...lookedUp, ...valueFlags(words)];
    const result = await helm(['template', 'tether', CHART_DIR, '--namespace', 'tether', ...flags]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it.each(fragments.map((flags) => [flags.join(' '), flags]))('renders with %s', async (_, flags) => {
    const result = await withValueArgs({}, (args) => helm(['template', 'tether', CHART_DIR, ...args, ...flags]));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('the extraction', () => {
  const markdown = [
    'Use `--set relay.dailyBudgetUsd=25`, not `Use --set-string …`.',
    '```sh',
    'helm install tether charts/tether -n tether \\',
    '  --set-string \'relay.allowedNumbers={+14155550123}\' --set a="b c"  # a comment',
    'kubectl get sessions',
    '```',
  ].join('\n');

  it('finds the commands of sh blocks and the --set spans of the prose', () => {
    const { commands, fragments } = documented(markdown);
    expect(commands.map(valueFlags)).toEqual([
      ['--set-string', 'relay.allowedNumbers={+14155550123}', '--set', 'a=b c'],
    ]);
    expect(fragments).toEqual([['--set', 'relay.dailyBudgetUsd=25']]);
  });

  it('finds commands in every document it checks', () => {
    const found = DOCS.map((path) => documented(readFileSync(path, 'utf8')));
    expect(found.filter((d) => d.commands.length > 0).length).toBeGreaterThanOrEqual(2);
  });
});
