// Which tool calls the agent may make without asking the phone. Configurable per install with
// TETHER_PERMISSION_POLICY (JSON); rules are `Tool` or `Tool(pattern)` where `*` matches anything.
import { lstatSync, readlinkSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
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

const MAX_SYMLINKS = 40;

/** Where an absolute path leads on disk, followed one part at a time as the kernel does (symlinks, then `..`). */
export function physicalPath(path: string): string {
  const todo = path.split('/').filter(Boolean);
  let real = '/';
  for (let links = 0; todo.length > 0;) {
    const part = todo.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      real = dirname(real);
      continue;
    }
    const next = join(real, part);
    let target: string | undefined;
    try {
      target = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      return join(next, ...todo); // not there yet: it will be created as spelled
    }
    if (target === undefined) real = next;
    else if (++links > MAX_SYMLINKS) return next; // a loop: the kernel refuses it too
    else {
      todo.unshift(...target.split('/').filter(Boolean));
      if (target.startsWith('/')) real = '/';
    }
  }
  return real;
}

/** Whether path (absolute, or relative to dir) is inside dir on disk, not just in its spelling. */
export function isInside(dir: string, path: string): boolean {
  const rel = relative(physicalPath(resolve(dir)), physicalPath(isAbsolute(path) ? path : `${resolve(dir)}/${path}`));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** deny beats allow beats ask; unknown tools are asked. */
export function decide(policy: Policy, repoDir: string, tool: string, input: Record<string, unknown>): Verdict {
  if (policy.deny.some((r) => matches(r, tool, input))) return 'deny';
  if (policy.allow.some((r) => matches(r, tool, input))) return 'allow';
  if (policy.ask.some((r) => matches(r, tool, input))) return 'ask';
  if (EDIT_TOOLS.has(tool) && policy.editsInsideRepo) {
    // `..` after a symlink leads elsewhere than its spelling says: such paths are asked.
    const path = subjectOf(input) && !subjectOf(input).split('/').includes('..') && resolve(repoDir, subjectOf(input));
    return path && isInside(repoDir, path) && !isInside(`${repoDir}/.git`, path) ? 'allow' : 'ask';
  }
  return 'ask';
}
