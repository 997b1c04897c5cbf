// The Session's parts about the forge: the pull request a command continues, what a fix answers,
// and who asked (part of the one definition in schema.ts, and of the CRD generated from it).
import { Type, type Static } from '@sinclair/typebox';
import { enumOf, immutable, text } from './schema-parts.ts';
import { BRANCH_MAX_LENGTH } from './repo.ts';

/** The branches Tether pushes to: the only refs a runner may update. */
export const TETHER_BRANCH_PATTERN = '^tether/[A-Za-z0-9][A-Za-z0-9._-]*$';
/** A git object id (SHA-1 or SHA-256). */
export const OBJECT_ID_PATTERN = '^[0-9a-f]{40}([0-9a-f]{24})?$';
/** A GitHub login: letters and digits in parts joined by single hyphens (at most 39 characters: maxLength). */
export const GITHUB_LOGIN_PATTERN = '^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$';
/** The most check runs one fix carries. */
export const FIX_CHECK_RUNS_MAX = 10;

export const PullRequestRef = Type.Object(
  {
    number: Type.Integer({ minimum: 1, maximum: 2_147_483_647, description: 'the pull request number' }),
    branch: Type.String({
      minLength: 9,
      maxLength: BRANCH_MAX_LENGTH,
      pattern: TETHER_BRANCH_PATTERN,
      description: 'its head branch, tether/…: the runner starts from its tip and pushes one more commit to it',
    }),
    url: Type.String({ maxLength: 2048, pattern: '^https?://[^\\s]+$', description: "the pull request's web page" }),
  },
  {
    description: 'the open pull request this command continues; unset: a new one from the base branch',
    ...immutable('pullRequest is immutable'),
  },
);

export const FixRequest = Type.Object(
  {
    kind: enumOf(['checks', 'review'] as const, 'what is fixed: failing checks, or a review asking for changes'),
    headSha: Type.String({ pattern: OBJECT_ID_PATTERN, description: 'the commit the checks ran on or was reviewed' }),
    checkRuns: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1 }), {
        maxItems: FIX_CHECK_RUNS_MAX,
        description: 'ids of the failing check runs (kind checks), whose output the supervisor fetches',
      }),
    ),
    reviewId: Type.Optional(
      Type.Integer({ minimum: 1, description: 'the review (kind review) whose comments the supervisor fetches' }),
    ),
  },
  {
    description:
      'a fix tapped on a pull request notice: the runner supervisor fetches the failure or the review from ' +
      'GitHub and gives it to the agent with the prompt (spec.pullRequest names the pull request)',
    ...immutable('fix is immutable'),
  },
);

export const Requester = Type.Object(
  {
    name: text(100, "the person's name, as the install's people map gives it"),
    email: Type.Optional(
      Type.String({ maxLength: 254, pattern: '^[^\\s<>@]+@[^\\s<>@]+$', description: 'for Co-authored-by' }),
    ),
    github: Type.Optional(
      Type.String({
        maxLength: 39,
        pattern: GITHUB_LOGIN_PATTERN,
        description: 'GitHub login: requested as the reviewer',
      }),
    ),
  },
  { description: "who asked (the install's people map): commits, the pull request body and its reviewer" },
);

export const CHANNELS = ['whatsapp', 'web'] as const;

export type PullRequestRef = Static<typeof PullRequestRef>;
export type FixRequest = Static<typeof FixRequest>;
export type Requester = Static<typeof Requester>;
export type Channel = (typeof CHANNELS)[number];
