// What a Session may name as its repository and branch. The Session spec is written by whoever may
// create Sessions, and both values reach git (with the forge token) in the runner: the patterns here
// are the CRD's (the API server refuses anything else), and the controller and the runner check the
// same patterns again, with the install's list of repository hosts, before any git runs.
// The patterns are RE2 (the API server's regex) and ECMAScript alike: no lookaround.

/** A branch character other than a dot; a component starts with a letter, digit or underscore. */
const BRANCH_CHAR = '[A-Za-z0-9_+#,=@-]';
const BRANCH_COMPONENT = `[A-Za-z0-9_](${BRANCH_CHAR}|\\.${BRANCH_CHAR})*`;

/**
 * A branch name git's check-ref-format accepts, narrowed: ASCII letters, digits and `_ + # , = @ -`,
 * components split by single slashes, each starting with a letter, digit or underscore (never `-`,
 * so never an option), no `..`, no leading or trailing dot, no `@{`, no spaces, control characters,
 * `~ ^ : ? * [ \`.
 */
export const BRANCH_PATTERN = `^${BRANCH_COMPONENT}(/${BRANCH_COMPONENT})*$`;
export const BRANCH_MAX_LENGTH = 255;

const HOST = '[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?';
const LOOPBACK = '(127\\.0\\.0\\.1|localhost)';
const PORT = '(:[0-9]{1,5})?';
/** A path component: no `..`, no trailing dot, no spaces, no `@ ? # :`. */
const PATH_COMPONENT = '\\.?[A-Za-z0-9_~%+=,-](\\.?[A-Za-z0-9_~%+=,-])*';
const PATH = `(/${PATH_COMPONENT})+/?`;

/**
 * The repository: `https://<host>[:port]/<path>` (no user, query or fragment), `http://` to loopback
 * only (a forge on the same machine), or an absolute path (a remote on the runner's own filesystem,
 * as the local stack has). Never an option (`-…`), ssh or another transport.
 */
export const REPO_URL_PATTERN = `^(https://${HOST}${PORT}|http://${LOOPBACK}${PORT})?${PATH}$`;
export const REPO_URL_MAX_LENGTH = 2048;

/** One entry of the install's repository host list: a host with an optional port, or an absolute folder. */
export const REPO_HOST_PATTERN = `^(${HOST}${PORT}|${PATH})$`;

/** The repository host list when the install names none. */
export const DEFAULT_REPO_HOSTS = ['github.com'] as const;

const branchPattern = new RegExp(BRANCH_PATTERN);
const repoUrlPattern = new RegExp(REPO_URL_PATTERN);
const repoHostPattern = new RegExp(REPO_HOST_PATTERN);

/** Where a repository URL leads: its host[:port], or the path of a local remote. */
function location(url: string): { host: string; port?: string } | { path: string } {
  if (url.startsWith('/')) return { path: url.replace(/\/$/, '') };
  const parsed = new URL(url);
  return { host: parsed.hostname.toLowerCase(), ...(parsed.port ? { port: parsed.port } : {}) };
}

/**
 * Does one host-list entry allow this location? A host without a port allows no other port; a folder allows what
 * is under it.
 */
function allows(entry: string, where: ReturnType<typeof location>): boolean {
  if ('path' in where) {
    const folder = entry.replace(/\/$/, '');
    return entry.startsWith('/') && (where.path === folder || where.path.startsWith(`${folder}/`));
  }
  const [host, port] = entry.toLowerCase().split(':');
  return host === where.host && port === where.port;
}

/** The entries of a comma-separated host list; throws on an entry that is neither a host nor a folder. */
export function parseRepoHosts(text: string): string[] {
  const entries = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = entries.find((entry) => !repoHostPattern.test(entry));
  if (bad !== undefined) throw new Error(`"${bad}" is not a host, host:port or absolute folder`);
  return entries;
}

/** Why the Session's repository or branch may not be used (plain words), or undefined when both may. */
export function repoProblem(
  repo: { url: string; baseBranch?: string },
  allowedHosts: readonly string[],
): string | undefined {
  if (repo.url.length > REPO_URL_MAX_LENGTH || !repoUrlPattern.test(repo.url)) {
    return (
      `spec.repo.url "${repo.url}" is not a repository URL this install accepts ` +
      '(https://host/path, or an absolute path)'
    );
  }
  if (
    repo.baseBranch !== undefined &&
    (repo.baseBranch.length > BRANCH_MAX_LENGTH || !branchPattern.test(repo.baseBranch))
  ) {
    return `spec.repo.baseBranch "${repo.baseBranch}" is not a branch name this install accepts`;
  }
  const where = location(repo.url);
  if (!allowedHosts.some((entry) => allows(entry, where))) {
    const named =
      'path' in where ? `the folder ${where.path}` : `the host ${where.host}${where.port ? `:${where.port}` : ''}`;
    return (
      `spec.repo.url points at ${named}, which is not on this install's list of repository hosts ` +
      `(${allowedHosts.join(', ')})`
    );
  }
  return undefined;
}
