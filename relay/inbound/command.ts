// What a new command asks for besides its words: a new pull request from the base (`new …`, first),
// plan first (`plan: …`, `plan …`) and a repository (`@web …`), in either order; and the `repo`
// keyword (list, or set the phone's default). Pure.

export type Mode = 'run' | 'plan';

export interface Command {
  prompt: string;
  mode: Mode;
  /** the `@name` given, lowercased and as typed otherwise (the caller checks it against the list) */
  repo?: string;
  /** `new …`: start from the base branch, not the phone's open pull request */
  fresh?: true;
}

/** `new:` / `new` then the command: a new pull request from the base. */
const NEW = /^new\b[ \t]*:?\s*/i;

/** `plan:` / `plan` then the command (newlines kept: scripts and long commands). */
const PLAN = /^plan\b[ \t]*:?\s*/i;
/** `@name` then the command; the name is whatever up to the first space (checked later). */
const AT = /^@(\S*)\s*/;

/** Reads the prefixes off a command; `prompt` is empty when only prefixes were sent ("plan", "@web"). */
export function readCommand(body: string): Command {
  let rest = body.trim();
  const fresh = NEW.exec(rest);
  if (fresh) rest = rest.slice(fresh[0].length);
  let mode: Mode = 'run';
  let repo: string | undefined;
  for (let i = 0; i < 2; i++) {
    const plan = mode === 'run' ? PLAN.exec(rest) : null;
    if (plan && (plan[0].includes(':') || rest.length > plan[0].length || /^plan$/i.test(rest))) {
      mode = 'plan';
      rest = rest.slice(plan[0].length);
      continue;
    }
    const at = repo === undefined ? AT.exec(rest) : null;
    if (at) {
      repo = at[1]!.toLowerCase();
      rest = rest.slice(at[0].length);
    }
  }
  return {
    prompt: rest.trim(),
    mode,
    ...(repo !== undefined ? { repo } : {}),
    ...(fresh ? { fresh: true as const } : {}),
  };
}

/**
 * `repo` / `repos` alone (list), or `repo <name>` with one word (set the default); undefined for
 * anything else, so "repos are slow, fix the cache" is a command.
 */
export function readRepoKeyword(text: string): { name?: string } | undefined {
  if (/^repos?$/i.test(text)) return {};
  const match = /^repo (\S+)$/i.exec(text);
  return match ? { name: match[1]!.toLowerCase() } : undefined;
}

/** A name the user typed, safe to echo: at most 30 characters, anything but [a-z0-9._-] shown as "?". */
export const echoName = (name: string) =>
  [...name]
    .slice(0, 30)
    .map((c) => (/^[a-z0-9._-]$/i.test(c) ? c : '?'))
    .join('') + ([...name].length > 30 ? '…' : '');
