// The one definition of the Session resource: TypeScript types (Static<>) and the CRD's
// openAPIV3Schema (scripts/generate-crd.ts) both come from here.
import { Type, type Static } from '@sinclair/typebox';
import { DEFAULT_BASE_BRANCH, SESSION_DEFAULTS } from './defaults.ts';
import { IMAGE_TYPES, LIMITS } from './limits.ts';
import { AGENT_SESSION_PATTERN, DNS_LABEL_PATTERN, DURATION_PATTERN, E164_PATTERN } from './patterns.ts';
import { enumOf, immutable, text, timestamp } from './schema-parts.ts';
import type { SessionStatus } from './status-schema.ts';
import { CHANNELS, FixRequest, PullRequestRef, Requester } from './forge-schema.ts';
import { BRANCH_MAX_LENGTH, BRANCH_PATTERN, REPO_URL_MAX_LENGTH, REPO_URL_PATTERN } from './repo.ts';

export const GROUP = 'tether.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'Session';
export const PLURAL = 'sessions';
export const API_VERSION = `${GROUP}/${VERSION}`;

export { IMAGE_TYPES, LIMITS } from './limits.ts';
export { AGENT_SESSION_PATTERN, DURATION_PATTERN, E164_PATTERN } from './patterns.ts';
export {
  Condition,
  Display,
  Media,
  Pending,
  PENDING_KINDS,
  PHASES,
  ProgressItem,
  Question,
  Result,
  SessionStatus,
  type Phase,
} from './status-schema.ts';

/**
 * revise: a plan's answer that is neither approve nor reject; its message goes back to the agent,
 * which plans again.
 */
export const DECISION_ACTIONS = ['approve', 'reject', 'allow', 'deny', 'answer', 'revise'] as const;

export const Decision = Type.Object({
  requestId: Type.String({ minLength: 1, maxLength: 128, description: 'id of the pending request this answers' }),
  action: enumOf(
    DECISION_ACTIONS,
    'approve|reject (changes, plan), revise (plan: message says what to change), allow|deny (tool), answer (question)',
  ),
  scope: Type.Optional(
    enumOf(
      ['once', 'session', 'repository'] as const,
      'for allow: this call (egress: connection) only, this tool (host) for the rest of the session, ' +
        'or (egress) this host for every later command on the repository',
    ),
  ),
  answers: Type.Optional(
    Type.Record(Type.String(), text(LIMITS.textChars, 'answer'), {
      description: 'question text → chosen label or free text',
      maxProperties: LIMITS.questions,
    }),
  ),
  message: Type.Optional(
    text(LIMITS.textChars, 'reason for deny/reject, free-text answer, or what to change in a plan (revise)'),
  ),
  by: Type.Optional(
    Type.String({ maxLength: 128, description: 'who decided (transport and masked sender), for audit' }),
  ),
  at: timestamp('when the decision was made'),
});

export const SessionSpec = Type.Object(
  {
    phone: Type.String({
      pattern: E164_PATTERN,
      description: 'the user, E.164 (+14155550123)',
      ...immutable('phone is immutable'),
    }),
    prompt: Type.String({
      minLength: 1,
      maxLength: LIMITS.promptChars,
      description: 'the command',
      ...immutable('prompt is immutable'),
    }),
    mode: Type.Optional(
      enumOf(['run', 'plan'] as const, 'plan: the agent proposes a plan and waits for approval first'),
    ),
    repo: Type.Object(
      {
        url: Type.String({
          minLength: 1,
          maxLength: REPO_URL_MAX_LENGTH,
          pattern: REPO_URL_PATTERN,
          description:
            "git remote: https://host/path (its host on the install's list), http:// to loopback, or an absolute path",
        }),
        baseBranch: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: BRANCH_MAX_LENGTH,
            pattern: BRANCH_PATTERN,
            default: DEFAULT_BASE_BRANCH,
            description:
              'branch to start from: letters, digits, _+#,=@- in slash-separated parts, ' +
              'never starting with - or containing ..',
          }),
        ),
      },
      { description: 'the git repository the agent works on', ...immutable('repo is immutable') },
    ),
    workspace: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: DNS_LABEL_PATTERN,
      description: 'name of the per-phone PersistentVolumeClaim (derived from the phone hash)',
      ...immutable('workspace is immutable'),
    }),
    timeouts: Type.Optional(
      Type.Object(
        {
          run: Type.Optional(
            Type.String({
              pattern: DURATION_PATTERN,
              default: SESSION_DEFAULTS.timeouts.run,
              description: 'whole-run limit',
            }),
          ),
          approval: Type.Optional(
            Type.String({
              pattern: DURATION_PATTERN,
              default: SESSION_DEFAULTS.timeouts.approval,
              description: 'limit on one pending request',
            }),
          ),
        },
        { description: "time limits, as durations like 30m or 2h; unset: the install's defaults" },
      ),
    ),
    cancel: Type.Optional(
      Type.Boolean({ default: false, description: 'true: stop the run and end the Session as Cancelled' }),
    ),
    costPauseUsd: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        description:
          'model spend (US dollars) at which the run pauses and asks to continue, then again at each multiple; ' +
          'unset or 0: never',
        ...immutable('costPauseUsd is immutable'),
      }),
    ),
    decisions: Type.Optional(
      Type.Array(Decision, {
        maxItems: LIMITS.decisions,
        description: 'append-only answers to pending requests',
        'x-kubernetes-list-type': 'atomic',
        'x-kubernetes-validations': [
          {
            rule: 'self.size() >= oldSelf.size() && oldSelf.all(d, d in self)',
            message: 'decisions are append-only',
          },
        ],
      }),
    ),
    resumeAgentSession: Type.Optional(
      Type.String({
        maxLength: 256,
        pattern: AGENT_SESSION_PATTERN,
        description: "agent session id to continue (it reaches the agent's command line and a file name)",
      }),
    ),
    diffRequests: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.diffFileNameChars }), {
        maxItems: LIMITS.diffRequests,
        description: 'append-only: files the phone asked to see (diff <file>) while the changes await review',
        'x-kubernetes-list-type': 'atomic',
        'x-kubernetes-validations': [
          {
            rule: 'self.size() >= oldSelf.size() && oldSelf.all(f, f in self)',
            message: 'diffRequests are append-only',
          },
        ],
      }),
    ),
    pullRequest: Type.Optional(PullRequestRef),
    fix: Type.Optional(FixRequest),
    requester: Type.Optional({ ...Requester, ...immutable('requester is immutable') }),
    channel: Type.Optional({
      ...enumOf(CHANNELS, 'where the command came from: WhatsApp or the web chat'),
      ...immutable('channel is immutable'),
    }),
    images: Type.Optional(
      Type.Array(
        Type.Object({
          ref: Type.String({
            minLength: 1,
            maxLength: 512,
            description: "relay media ref <namespace>/<session>/<file>, under the Session's own prefix",
          }),
          contentType: enumOf(IMAGE_TYPES, 'image type, checked against the bytes'),
          bytes: Type.Integer({ minimum: 1, maximum: LIMITS.imageBytes, description: 'size of the picture' }),
        }),
        {
          maxItems: LIMITS.images,
          description:
            "pictures sent with the command (refs in the relay's media store, never the bytes); " +
            'given to the agent with the prompt',
          'x-kubernetes-list-type': 'atomic',
          ...immutable('images are immutable'),
        },
      ),
    ),
  },
  {
    description: 'the command and its settings, written by the relay; the phone adds decisions and cancel',
    // A field's own rule cannot see it added or removed after creation.
    'x-kubernetes-validations': [
      { rule: 'has(self.costPauseUsd) == has(oldSelf.costPauseUsd)', message: 'costPauseUsd is immutable' },
      { rule: 'has(self.pullRequest) == has(oldSelf.pullRequest)', message: 'pullRequest is immutable' },
      { rule: 'has(self.fix) == has(oldSelf.fix)', message: 'fix is immutable' },
      { rule: 'has(self.requester) == has(oldSelf.requester)', message: 'requester is immutable' },
      { rule: 'has(self.channel) == has(oldSelf.channel)', message: 'channel is immutable' },
    ],
  },
);

export type DecisionAction = (typeof DECISION_ACTIONS)[number];
export type Decision = Static<typeof Decision>;
export type SessionSpec = Static<typeof SessionSpec>;
export type SessionImage = NonNullable<SessionSpec['images']>[number];

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export interface Session {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: ObjectMeta;
  spec: SessionSpec;
  status?: SessionStatus;
}
