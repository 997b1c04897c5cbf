// Which tool calls the agent may make without asking the phone. Configurable per install with
// TETHER_PERMISSION_POLICY (JSON); rules are `Tool` or `Tool(pattern)` where `*` matches anything.
import { isAbsolute, relative, resolve } from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { SCREENSHOT_TOOL } from './agents/types.ts';

export const PolicySchema = Type.Object({
  allow: Type.Array(Type.String({ minLength: 1 })),
  ask: Type.Array(Type.String({ minLength: 1 })),
  deny: Type.Array(Type.String({ minLength: 1 })),
  /** Edit/Write/MultiEdit/NotebookEdit inside the repository are allowed without asking. */
  editsInsideRepo: Type.Boolean(),
}, { additionalProperties: false });
export type Policy = Static<typeof PolicySchema>;

export const DEFAULT_POLICY: Policy = {
  allow: ['Read', 'Glob', 'Grep', 'LS', 'NotebookRead', 'TodoWrite', 'TodoRead', 'Task', 'BashOutput', SCREENSHOT_TOOL],
  ask: ['Bash', 'WebFetch', 'WebSearch', 'KillShell', 'KillBash'],
  deny: [],
  editsInsideRepo: true,
};

const EDIT_TOOLS = new Set(['Edit', 'Write', 'MultiEdit', 'NotebookEdit']);

export type Verdict = 'allow' | 'ask' | 'deny';

export function parsePolicy(json: string | undefined): Policy {
  if (!json) return DEFAULT_POLICY;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new Error(`TETHER_PERMISSION_POLICY is not JSON: ${(error as Error).message}`, { cause: error });
  }
  const merged = { ...DEFAULT_POLICY, ...(value as object) };
  const first = Value.Errors(PolicySchema, merged).First();
  if (first) throw new Error(`TETHER_PERMISSION_POLICY${first.path.replace(/\//g, '.')}: ${first.message}`);
  return merged;
}

/** The text a rule's pattern is matched against: the command, the path or the URL. */
export function subjectOf(input: Record<string, unknown>): string {
  for (const key of ['command', 'file_path', 'notebook_path', 'path', 'url', 'pattern']) {
    if (typeof input[key] === 'string') return input[key];
  }
  return '';
}

const globToRegExp = (glob: string) => new RegExp(`^${glob.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');

export function matches(rule: string, tool: string, input: Record<string, unknown>): boolean {
  const m = /^([^()]+)(?:\((.*)\))?$/s.exec(rule.trim());
  if (!m || m[1] !== tool) return false;
  return m[2] === undefined || globToRegExp(m[2]).test(subjectOf(input));
}

export function isInside(dir: string, path: string): boolean {
  const rel = relative(resolve(dir), resolve(dir, path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** deny beats allow beats ask; unknown tools are asked. */
export function decide(policy: Policy, repoDir: string, tool: string, input: Record<string, unknown>): Verdict {
  if (policy.deny.some((r) => matches(r, tool, input))) return 'deny';
  if (policy.allow.some((r) => matches(r, tool, input))) return 'allow';
  if (policy.ask.some((r) => matches(r, tool, input))) return 'ask';
  if (EDIT_TOOLS.has(tool) && policy.editsInsideRepo) {
    const path = subjectOf(input) && resolve(repoDir, subjectOf(input));
    return path && isInside(repoDir, path) && !isInside(`${repoDir}/.git`, path) ? 'allow' : 'ask';
  }
  return 'ask';
}
