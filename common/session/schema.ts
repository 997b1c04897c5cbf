// The one definition of the Session resource: TypeScript types (Static<>) and the CRD's
// openAPIV3Schema (scripts/generate-crd.ts) both come from here.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { SESSION_DEFAULTS } from './defaults.ts';
import { BRANCH_MAX_LENGTH, BRANCH_PATTERN, REPO_URL_MAX_LENGTH, REPO_URL_PATTERN } from './repo.ts';

export const GROUP = 'tether.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'Session';
export const PLURAL = 'sessions';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const LIMITS = {
  promptChars: 8192,
  decisions: 200,
  progressItems: 50,
  progressTextChars: 500,
  diffChars: 32768,
  textChars: 4000,
  /** A tool request's input as JSON, shown whole on the phone: about ten 1,600-character messages. */
  toolInputChars: 16384,
  media: 20,
  questions: 4,
  options: 8,
  conditions: 16,
  /** `diff <file>` requests a Session answers; file names listed for them. */
  diffRequests: 20,
  diffFileNames: 100,
  /** A file name in a `diff <file>` request or the list of names offered. */
  diffFileNameChars: 512,
  /** WhatsApp's limit for an image sent through Twilio: every picture for the phone stays within it. */
  mediaBytes: 5 * 1024 * 1024,
  /** Pictures one command may carry (Twilio delivers at most 10 media a message). */
  images: 10,
  /** A picture from the phone: Claude's 5 MB image limit applies to the base64 text, 4/3 of the bytes. */
  imageBytes: 3_750_000,
  /** The pictures of one command as base64: the Messages API takes 32 MB a request, and the conversation needs room too. */
  imagesBase64Bytes: 20_000_000,
} as const;

/** What the agent accepts as an image input. */
export const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;

export const PHASES = [
  'Queued',
  'Starting',
  'Working',
  'AwaitingApproval',
  'Publishing',
  'Succeeded',
  'Rejected',
  'Cancelled',
  'TimedOut',
  'Failed',
] as const;
/** revise: a plan's answer that is neither approve nor reject; its message goes back to the agent, which plans again. */
export const DECISION_ACTIONS = ['approve', 'reject', 'allow', 'deny', 'answer', 'revise'] as const;
export const PENDING_KINDS = ['tool', 'question', 'changes', 'plan', 'cost'] as const;

const enumOf = <T extends readonly string[]>(values: T, description: string): TSchema & { static: T[number] } =>
  ({ ...Type.Unsafe<T[number]>({ type: 'string', enum: [...values], description }) }) as never;

const text = (maxLength: number, description: string) => Type.String({ maxLength, description });
const timestamp = (description: string) => Type.String({ format: 'date-time', description });
const immutable = (message: string) => ({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message }] });

/** E.164: a plus, a non-zero digit, up to 15 digits in all. */
export const E164_PATTERN = '^\\+[1-9][0-9]{6,14}$';
/** A Go-style duration of whole units: 90s, 30m, 1h30m. */
export const DURATION_PATTERN = '^([0-9]+(h|m|s))+$';
/** An agent session id (a UUID from Claude Code): never an option or a path. */
export const AGENT_SESSION_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]*$';
const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

export const Decision = Type.Object({
  requestId: Type.String({ minLength: 1, maxLength: 128, description: 'id of the pending request this answers' }),
  action: enumOf(
    DECISION_ACTIONS,
    'approve|reject (changes, plan), revise (plan: message says what to change), allow|deny (tool), answer (question)',
  ),
  scope: Type.Optional(
    enumOf(['once', 'session'] as const, 'for allow: this call only, or this tool for the rest of the session'),
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
            default: 'main',
            description:
              'branch to start from: letters, digits, _+#,=@- in slash-separated parts, never starting with - or containing ..',
          }),
        ),
      },
      immutable('repo is immutable'),
    ),
    workspace: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: DNS_LABEL_PATTERN,
      description: 'name of the per-phone PersistentVolumeClaim (derived from the phone hash)',
      ...immutable('workspace is immutable'),
    }),
    timeouts: Type.Optional(
      Type.Object({
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
      }),
    ),
    cancel: Type.Optional(Type.Boolean({ default: false })),
    costPauseUsd: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1e6,
        description:
          'model spend (US dollars) at which the run pauses and asks to continue, then again at each multiple; unset or 0: never',
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
    images: Type.Optional(
      Type.Array(
        Type.Object({
          ref: Type.String({
            minLength: 1,
            maxLength: 512,
            description: "relay media ref <namespace>/<session>/<file>, under the Session's own prefix",
          }),
          contentType: enumOf(IMAGE_TYPES, 'image type, checked against the bytes'),
          bytes: Type.Integer({ minimum: 1, maximum: LIMITS.imageBytes }),
        }),
        {
          maxItems: LIMITS.images,
          description:
            "pictures sent with the command (refs in the relay's media store, never the bytes); given to the agent with the prompt",
          'x-kubernetes-list-type': 'atomic',
          ...immutable('images are immutable'),
        },
      ),
    ),
  },
  {
    // A field's own rule cannot see it added or removed after creation.
    'x-kubernetes-validations': [
      { rule: 'has(self.costPauseUsd) == has(oldSelf.costPauseUsd)', message: 'costPauseUsd is immutable' },
    ],
  },
);

export const Condition = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 316,
    pattern:
      '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
  }),
  status: enumOf(['True', 'False', 'Unknown'] as const, 'status of the condition'),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  lastTransitionTime: timestamp('last time the status changed'),
  reason: Type.String({ minLength: 1, maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: Type.String({ maxLength: 32768 }),
});

export const ProgressItem = Type.Object({
  seq: Type.Integer({ minimum: 1, description: 'monotonically increasing over the session' }),
  at: timestamp('when it happened'),
  text: Type.String({ maxLength: LIMITS.progressTextChars }),
});

export const Question = Type.Object({
  question: text(1000, 'the question'),
  header: Type.Optional(text(100, 'short label')),
  multiSelect: Type.Optional(Type.Boolean()),
  options: Type.Array(
    Type.Object({
      label: text(200, 'option label'),
      description: Type.Optional(text(1000, 'option description')),
    }),
    { maxItems: LIMITS.options },
  ),
});

export const Pending = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 128 }),
  kind: enumOf(PENDING_KINDS, 'what is asked'),
  tool: Type.Optional(Type.String({ maxLength: 256, description: 'tool name (kind tool)' })),
  input: Type.Optional(
    text(LIMITS.toolInputChars, 'tool input as JSON, cut at the limit only when longer (kind tool)'),
  ),
  inputChars: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'length of the whole input as JSON; more than input holds when it was cut (kind tool)',
    }),
  ),
  questions: Type.Optional(Type.Array(Question, { maxItems: LIMITS.questions })),
  summary: Type.Optional(text(LIMITS.textChars, 'plan text, or what changed (kind plan / changes)')),
  costUsd: Type.Optional(Type.Number({ minimum: 0, description: 'model spend of the run so far (kind cost)' })),
  createdAt: timestamp('when the request was raised'),
});

export const Media = Type.Object({
  kind: enumOf(['diff', 'screenshot'] as const, 'what the image shows'),
  ref: Type.String({ minLength: 1, maxLength: 2048, description: 'relay media id or path on the workspace volume' }),
  contentType: enumOf(['image/png', 'image/jpeg'] as const, 'image type'),
  caption: Type.Optional(text(1000, 'caption')),
  bytes: Type.Optional(Type.Integer({ minimum: 0 })),
  request: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: 'the diff request (1-based, spec.diffRequests) this page answers; unset: a review page',
    }),
  ),
});

export const Result = Type.Object({
  summary: Type.Optional(text(LIMITS.textChars, "the agent's final text")),
  diffStat: Type.Optional(text(8000, 'git diff --stat')),
  diff: Type.Optional(text(LIMITS.diffChars, 'unified diff, truncated with a marker')),
  diffLines: Type.Optional(
    Type.Object(
      {
        total: Type.Integer({ minimum: 0 }),
        inImage: Type.Integer({ minimum: 0 }),
      },
      { description: 'lines of the unified diff, and how many of them the diff pictures show' },
    ),
  ),
  diffFiles: Type.Optional(
    Type.Object(
      {
        names: Type.Array(Type.String({ maxLength: LIMITS.diffFileNameChars }), { maxItems: LIMITS.diffFileNames }),
        total: Type.Integer({ minimum: 0 }),
        shown: Type.Integer({ minimum: 0 }),
      },
      { description: 'changed files (the first names), how many there are, and how many the review pages show' },
    ),
  ),
  diffAnswered: Type.Optional(Type.Integer({ minimum: 0, description: 'spec.diffRequests answered so far' })),
  snapshotTree: Type.Optional(
    Type.String({
      pattern: '^[0-9a-f]{40}([0-9a-f]{24})?$',
      description:
        'git tree the diff shows, snapshotted from the workspace; approving pushes a commit of exactly this tree',
    }),
  ),
  media: Type.Optional(Type.Array(Media, { maxItems: LIMITS.media })),
  prUrl: Type.Optional(Type.String({ maxLength: 2048 })),
  branch: Type.Optional(Type.String({ maxLength: 255 })),
  agentSessionId: Type.Optional(Type.String({ maxLength: 256 })),
  costUsd: Type.Optional(Type.Number({ minimum: 0 })),
  tokens: Type.Optional(Type.Object({ input: Type.Integer({ minimum: 0 }), output: Type.Integer({ minimum: 0 }) })),
  exitCode: Type.Optional(Type.Integer()),
  message: Type.Optional(text(LIMITS.textChars, 'what went wrong, in plain words')),
});

export const Display = Type.Object(
  {
    phone: Type.Optional(Type.String({ maxLength: 32, description: 'masked phone, e.g. +1415•••1234' })),
    prompt: Type.Optional(Type.String({ maxLength: 64, description: 'prompt, truncated' })),
    duration: Type.Optional(Type.String({ maxLength: 32, description: 'start to completion, e.g. 3m12s' })),
  },
  { description: 'values for kubectl columns the schema cannot compute; written by the controller' },
);

export const SessionStatus = Type.Object({
  phase: Type.Optional(enumOf(PHASES, 'lifecycle phase')),
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(
    Type.Array(Condition, {
      maxItems: LIMITS.conditions,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
  ),
  podName: Type.Optional(Type.String({ maxLength: 253 })),
  startTime: Type.Optional(timestamp('when the runner pod was created')),
  completionTime: Type.Optional(timestamp('when a terminal phase was reached')),
  progress: Type.Optional(Type.Array(ProgressItem, { maxItems: LIMITS.progressItems })),
  pending: Type.Optional(Pending),
  result: Type.Optional(Result),
  display: Type.Optional(Display),
});

export type Phase = (typeof PHASES)[number];
export type DecisionAction = (typeof DECISION_ACTIONS)[number];
export type Decision = Static<typeof Decision>;
export type SessionSpec = Static<typeof SessionSpec>;
export type SessionStatus = Static<typeof SessionStatus>;
export type Condition = Static<typeof Condition>;
export type ProgressItem = Static<typeof ProgressItem>;
export type Pending = Static<typeof Pending>;
export type Result = Static<typeof Result>;
export type Media = Static<typeof Media>;
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
