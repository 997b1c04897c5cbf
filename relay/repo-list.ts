// The install's list of repositories (read from the configuration), each with a short name a phone
// can pick (`@web …`, `repo web`). Which one a phone's command uses: inbound/phone-repos.ts.
// The first is the install's default: its workspace keeps the name every workspace had before
// installs listed several (names.ts workspaceName).
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { DEFAULT_BASE_BRANCH } from '../common/session/defaults.ts';
import { REPO_NAME_MAX_LENGTH, REPO_NAME_PATTERN } from '../common/session/names.ts';
import { BRANCH_MAX_LENGTH, BRANCH_PATTERN, REPO_URL_MAX_LENGTH, REPO_URL_PATTERN } from '../common/session/repo.ts';

export interface NamedRepo {
  name: string;
  url: string;
  baseBranch: string;
}

const RepoEntry = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: REPO_NAME_MAX_LENGTH, pattern: REPO_NAME_PATTERN }),
    url: Type.String({ minLength: 1, maxLength: REPO_URL_MAX_LENGTH, pattern: REPO_URL_PATTERN }),
    baseBranch: Type.Optional(Type.String({ minLength: 1, maxLength: BRANCH_MAX_LENGTH, pattern: BRANCH_PATTERN })),
  },
  { additionalProperties: false },
);
export const REPO_LIST = Type.Array(RepoEntry, { maxItems: 50 });

/** A short name for a repository from its URL: its last path segment without .git, as a DNS label; else "default". */
export function nameFromUrl(url: string): string {
  const last = url.replace(/\/+$/, '').split('/').at(-1) ?? '';
  const label = last
    .replace(/\.git$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .slice(0, REPO_NAME_MAX_LENGTH)
    .replace(/^-+|-+$/g, '');
  return label || 'default';
}

/** The install's one repository, when no list is given: named from its URL, on `main` unless told. */
export const installRepo = (repo: { url: string; baseBranch?: string }): NamedRepo => ({
  name: nameFromUrl(repo.url),
  baseBranch: DEFAULT_BASE_BRANCH,
  ...repo,
});

/**
 * The install's list: the default repository first, then the JSON list `more` (TETHER_REPOS).
 * Throws a plain message (for ConfigError) on an entry that is not valid or a name used twice.
 */
export function repoList(first: NamedRepo, more: string | undefined): NamedRepo[] {
  let parsed: unknown = [];
  if (more !== undefined) {
    try {
      parsed = JSON.parse(more);
    } catch {
      throw new Error(
        'is not JSON: expected [{"name":"web","url":"https://github.com/acme/web.git","baseBranch":"main"}, …]',
      );
    }
  }
  const error = Value.Errors(REPO_LIST, parsed).First();
  if (error) {
    const hint = error.path.endsWith('/name')
      ? ` (a name is lowercase letters, digits and -, at most ${REPO_NAME_MAX_LENGTH} characters)`
      : '';
    throw new Error(`entry ${error.path || '(the list)'}: ${error.message}${hint}`);
  }
  const list = [
    first,
    ...(parsed as Static<typeof REPO_LIST>).map((r) => ({
      name: r.name,
      url: r.url,
      baseBranch: r.baseBranch ?? DEFAULT_BASE_BRANCH,
    })),
  ];
  const seen = new Set<string>();
  for (const repo of list) {
    if (seen.has(repo.name))
      throw new Error(`the name "${repo.name}" is given twice (the default repository is named "${first.name}")`);
    seen.add(repo.name);
  }
  return list;
}

/** The repository `name` picks (case-insensitive), or undefined. */
export const findRepo = (repos: readonly NamedRepo[], name: string) => repos.find((r) => r.name === name.toLowerCase());

/** The workspace's repository part: none for the install's default (repos[0]). */
export const workspaceRepo = (repos: readonly NamedRepo[], repo: NamedRepo) =>
  repo === repos[0] ? undefined : repo.name;
