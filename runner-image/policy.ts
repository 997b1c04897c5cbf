// Which tool calls the agent may make without asking the phone. Configurable per install with
// TETHER_PERMISSION_POLICY (JSON); rules are `Tool` or `Tool(pattern)` where `*` matches anything.
import { policyOver, type Policy } from '../common/permission-policy.ts';
import { SCREENSHOT_TOOL } from './agents/types.ts';
import { isLoopbackUrl } from './pictures/loopback.ts';
import { isInside, realPath } from './workspace/paths.ts';

export type { Policy } from '../common/permission-policy.ts';

/** A bare name in `allow` covers the tool's safe reach only: paths in the checkout, loopback pages. */
export const DEFAULT_POLICY: Policy = {
  allow: ['Read', 'Glob', 'Grep', 'LS', 'NotebookRead', 'TodoWrite', 'TodoRead', 'Task', 'BashOutput', SCREENSHOT_TOOL],
  ask: ['Bash', 'WebFetch', 'WebSearch', 'KillShell', 'KillBash'],
  deny: [],
  editsInsideRepo: true,
};

const READ_TOOLS = new Set(['Read', 'Glob', 'Grep', 'LS', 'NotebookRead']);
const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);

export type Verdict = 'allow' | 'ask' | 'deny';

export interface Ruling {
  verdict: Verdict;
  /** Why, in words the phone can show ("reads outside the repository checkout"). */
  reason: string;
  /** For an ask: whether "allow always" on it may cover this tool's later calls. */
  always: boolean;
}

export function parsePolicy(json: string | undefined): Policy {
  return json ? policyOver(DEFAULT_POLICY, json, 'TETHER_PERMISSION_POLICY') : DEFAULT_POLICY;
}

/** The text a rule's pattern is matched against: the command, the path or the URL. */
export function subjectOf(input: Record<string, unknown>): string {
  for (const key of ['command', 'file_path', 'notebook_path', 'path', 'url', 'pattern']) {
    if (typeof input[key] === 'string') return input[key];
  }
  return '';
}

const globToRegExp = (glob: string) =>
  new RegExp(
    `^${glob
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );

const parseRule = (rule: string) => /^([^()]+)(?:\((.*)\))?$/s.exec(rule.trim());

/** Whether `rule` names this tool and, if it has a pattern, the pattern matches `subject`. */
export function matches(rule: string, tool: string, subject: string): boolean {
  const m = parseRule(rule);
  if (!m || m[1] !== tool) return false;
  return m[2] === undefined || globToRegExp(m[2]).test(subject);
}

const hasPattern = (rule: string) => parseRule(rule)?.[2] !== undefined;

/** A Glob pattern's fixed leading directories, or undefined when it can climb (`..`) past them. */
function globBase(pattern: string): string | undefined {
  const parts = pattern.split('/');
  const dynamic = parts.findIndex((p) => /[*?[{]/.test(p));
  const fixed = dynamic < 0 ? parts : parts.slice(0, dynamic);
  if (dynamic >= 0 && /(^|[/{,])\.\.($|[/},])/.test(parts.slice(dynamic).join('/'))) return undefined;
  return fixed.join('/') || (pattern.startsWith('/') ? '/' : '.');
}

/** The paths a file tool would touch (relative ones against the repository); undefined: unknowable. */
function pathsOf(tool: string, input: Record<string, unknown>): (string | undefined)[] {
  const given = ['file_path', 'notebook_path', 'path']
    .map((k) => input[k])
    .filter((v): v is string => typeof v === 'string');
  if (tool === 'Glob' && typeof input.pattern === 'string') {
    const base = globBase(input.pattern);
    if (base === undefined) return [undefined];
    given.push(base.startsWith('/') ? base : `${given[0] ?? '.'}/${base}`);
  }
  return given.length || EDIT_TOOLS.has(tool) ? given : ['.'];
}

/** What the subjects of rules are: the text given, and for file tools where the paths really lead. */
function subjects(
  tool: string,
  input: Record<string, unknown>,
  repoDir: string,
): { text: string; real?: (string | undefined)[] } {
  if (!READ_TOOLS.has(tool) && !EDIT_TOOLS.has(tool)) return { text: subjectOf(input) };
  return {
    text: subjectOf(input),
    real: pathsOf(tool, input).map((p) => (p === undefined ? undefined : realPath(p, repoDir))),
  };
}

/** Why a call is beyond what a bare allow (or editsInsideRepo) may cover; undefined when it is not. */
function beyondReach(
  tool: string,
  input: Record<string, unknown>,
  real: (string | undefined)[] | undefined,
  repoDir: string,
): string | undefined {
  if (tool === SCREENSHOT_TOOL)
    return isLoopbackUrl(String(input.url ?? '')) ? undefined : 'screenshots of pages not on this machine (loopback)';
  if (!real) return undefined;
  const repo = realPath(repoDir, '/');
  const verb = EDIT_TOOLS.has(tool) ? 'edits' : 'reads';
  if (!repo || real.length === 0 || real.some((p) => !p || !isInside(repo, p)))
    return `${verb} outside the repository checkout`;
  if (EDIT_TOOLS.has(tool) && real.some((p) => isInside(`${repo}/.git`, p!))) return 'edits inside .git';
  return undefined;
}

const NO_GRANTS: ReadonlySet<string> = new Set();

/**
 * In this order: deny rules; ask rules with a pattern; allow rules with a pattern (a file tool's
 * real path must match); the tool's safe reach (file tools: the repository checkout, edits not in
 * .git; the screenshot tool: loopback) — beyond it is asked; bare allow rules (editsInsideRepo for
 * edit tools); tools the user allowed always (`granted`); everything else is asked.
 */
export function decide(
  policy: Policy,
  repoDir: string,
  tool: string,
  input: Record<string, unknown>,
  granted = NO_GRANTS,
): Ruling {
  const { text, real } = subjects(tool, input, repoDir);
  const anySubject = (rule: string) =>
    matches(rule, tool, text) || (real ?? []).some((p) => p !== undefined && matches(rule, tool, p));
  const everyRealSubject = (rule: string) =>
    real ? real.length > 0 && real.every((p) => p !== undefined && matches(rule, tool, p)) : matches(rule, tool, text);
  const denied = policy.deny.find(anySubject);
  if (denied) return { verdict: 'deny', reason: `the deny rule ${denied}`, always: false };
  const asked = policy.ask.find((rule) => hasPattern(rule) && anySubject(rule));
  if (asked) return { verdict: 'ask', reason: `calls matching the ask rule ${asked}`, always: false };
  const allowed = policy.allow.find((rule) => hasPattern(rule) && everyRealSubject(rule));
  if (allowed) return { verdict: 'allow', reason: `the allow rule ${allowed}`, always: false };
  const beyond = beyondReach(tool, input, real, repoDir);
  if (beyond) return { verdict: 'ask', reason: beyond, always: false };
  if (policy.allow.some((rule) => !hasPattern(rule) && matches(rule, tool, text)))
    return { verdict: 'allow', reason: `the allow rule ${tool}`, always: false };
  if (EDIT_TOOLS.has(tool) && policy.editsInsideRepo)
    return { verdict: 'allow', reason: 'edits inside the repository', always: false };
  if (granted.has(tool)) return { verdict: 'allow', reason: `"allow always" for ${tool}`, always: false };
  return { verdict: 'ask', reason: `${tool} calls`, always: true };
}
