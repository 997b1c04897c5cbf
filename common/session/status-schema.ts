// The Session's status: what the controller and the runner report (part of the one definition in
// schema.ts, and of the CRD generated from it).
import { Type, type Static } from '@sinclair/typebox';
import { LIMITS } from './limits.ts';
import { CONDITION_TYPE_PATTERN, EGRESS_HOST_PATTERN } from './patterns.ts';
import { enumOf, text, timestamp } from './schema-parts.ts';

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
export const PENDING_KINDS = ['tool', 'question', 'changes', 'plan', 'cost', 'egress'] as const;

export const Condition = Type.Object({
  type: Type.String({
    minLength: 1,
    maxLength: 316,
    pattern: CONDITION_TYPE_PATTERN,
    description: 'condition type in CamelCase: Admitted, Started, Finished',
  }),
  status: enumOf(['True', 'False', 'Unknown'] as const, 'status of the condition'),
  observedGeneration: Type.Optional(
    Type.Integer({ minimum: 0, description: 'metadata.generation the condition was set from' }),
  ),
  lastTransitionTime: timestamp('last time the status changed'),
  reason: Type.String({
    minLength: 1,
    maxLength: 1024,
    pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    description: 'machine-readable reason for the last transition, in CamelCase',
  }),
  message: Type.String({ maxLength: 32768, description: 'human-readable details of the last transition' }),
});

export const ProgressItem = Type.Object({
  seq: Type.Integer({ minimum: 1, description: 'monotonically increasing over the session' }),
  at: timestamp('when it happened'),
  text: Type.String({ maxLength: LIMITS.progressTextChars, description: 'what the agent did, in one line' }),
});

export const Question = Type.Object({
  question: text(1000, 'the question'),
  header: Type.Optional(text(100, 'short label')),
  multiSelect: Type.Optional(Type.Boolean({ description: 'true: more than one option may be chosen' })),
  options: Type.Array(
    Type.Object({
      label: text(200, 'option label'),
      description: Type.Optional(text(1000, 'option description')),
    }),
    { maxItems: LIMITS.options, description: 'the choices offered' },
  ),
});

export const Pending = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 128, description: 'request id; a decision names it in requestId' }),
    kind: enumOf(PENDING_KINDS, 'what is asked'),
    tool: Type.Optional(
      Type.String({
        maxLength: 256,
        description: 'tool name (kind tool; kind egress: the tool call that was running)',
      }),
    ),
    input: Type.Optional(
      text(LIMITS.toolInputChars, 'tool input as JSON, cut at the limit only when longer (kind tool)'),
    ),
    inputChars: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'length of the whole input as JSON; more than input holds when it was cut (kind tool)',
      }),
    ),
    questions: Type.Optional(
      Type.Array(Question, { maxItems: LIMITS.questions, description: 'the questions asked (kind question)' }),
    ),
    summary: Type.Optional(text(LIMITS.textChars, 'plan text, or what changed (kind plan / changes)')),
    costUsd: Type.Optional(Type.Number({ minimum: 0, description: 'model spend of the run so far (kind cost)' })),
    host: Type.Optional(
      Type.String({
        maxLength: LIMITS.egressHostChars,
        pattern: EGRESS_HOST_PATTERN,
        description: 'the host the agent tries to reach (kind egress)',
      }),
    ),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'its port (kind egress)' })),
    createdAt: timestamp('when the request was raised'),
  },
  { description: 'the request waiting for an answer from the phone (spec.decisions)' },
);

export const EgressRecord = Type.Object({
  host: Type.String({
    maxLength: LIMITS.egressHostChars,
    pattern: EGRESS_HOST_PATTERN,
    description: 'destination host',
  }),
  port: Type.Integer({ minimum: 1, maximum: 65535, description: 'destination port' }),
  caller: enumOf(['agent', 'supervisor'] as const, "who connected: the agent's processes or Tether's supervisor"),
  allowed: Type.Integer({ minimum: 0, description: 'connections the egress proxy let through' }),
  refused: Type.Integer({ minimum: 0, description: 'connections it refused' }),
  bytes: Type.Integer({ minimum: 0, description: 'bytes carried both ways by the allowed connections' }),
  lastAt: timestamp('when the latest of them ended'),
  reason: Type.Optional(text(200, 'why the latest refused one was refused')),
});

export const Media = Type.Object({
  kind: enumOf(['diff', 'screenshot'] as const, 'what the image shows'),
  ref: Type.String({ minLength: 1, maxLength: 2048, description: 'relay media id or path on the workspace volume' }),
  contentType: enumOf(['image/png', 'image/jpeg'] as const, 'image type'),
  caption: Type.Optional(text(1000, 'caption')),
  bytes: Type.Optional(Type.Integer({ minimum: 0, description: 'size of the image' })),
  request: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: 'the diff request (1-based, spec.diffRequests) this page answers; unset: a review page',
    }),
  ),
});

export const Result = Type.Object(
  {
    summary: Type.Optional(text(LIMITS.textChars, "the agent's final text")),
    diffStat: Type.Optional(text(8000, 'git diff --stat')),
    diff: Type.Optional(text(LIMITS.diffChars, 'unified diff, truncated with a marker')),
    diffLines: Type.Optional(
      Type.Object(
        {
          total: Type.Integer({ minimum: 0, description: 'lines of the whole unified diff' }),
          inImage: Type.Integer({ minimum: 0, description: 'lines the diff pictures show' }),
        },
        { description: 'lines of the unified diff, and how many of them the diff pictures show' },
      ),
    ),
    diffFiles: Type.Optional(
      Type.Object(
        {
          names: Type.Array(Type.String({ maxLength: LIMITS.diffFileNameChars }), {
            maxItems: LIMITS.diffFileNames,
            description: 'paths of the first changed files',
          }),
          total: Type.Integer({ minimum: 0, description: 'changed files in all' }),
          shown: Type.Integer({ minimum: 0, description: 'changed files the review pages show' }),
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
    media: Type.Optional(
      Type.Array(Media, { maxItems: LIMITS.media, description: 'pictures for the phone: diff pages and screenshots' }),
    ),
    prUrl: Type.Optional(Type.String({ maxLength: 2048, description: 'the pull request opened for the changes' })),
    branch: Type.Optional(Type.String({ maxLength: 255, description: 'the branch the changes were pushed to' })),
    prNumber: Type.Optional(Type.Integer({ minimum: 1, description: 'the pull request number' })),
    commit: Type.Optional(
      Type.String({ pattern: '^[0-9a-f]{40}([0-9a-f]{24})?$', description: 'the commit pushed to the branch' }),
    ),
    pushed: Type.Optional(
      enumOf(
        ['opened', 'added', 'onNewTip'] as const,
        'how the commit reached the pull request: opened it, added to its branch, or put on a tip someone else pushed',
      ),
    ),
    prStat: Type.Optional(text(200, "the whole pull request's size from its base, in one line (files, +/−)")),
    agentSessionId: Type.Optional(
      Type.String({ maxLength: 256, description: "the agent's session id; a later command may resume it" }),
    ),
    costUsd: Type.Optional(Type.Number({ minimum: 0, description: 'model spend of the run, US dollars' })),
    tokens: Type.Optional(
      Type.Object(
        {
          input: Type.Integer({ minimum: 0, description: 'input tokens' }),
          output: Type.Integer({ minimum: 0, description: 'output tokens' }),
        },
        { description: 'model tokens used by the run' },
      ),
    ),
    exitCode: Type.Optional(Type.Integer({ description: "the agent process's exit code" })),
    message: Type.Optional(text(LIMITS.textChars, 'what went wrong, in plain words')),
  },
  { description: 'the outcome: summary, diff, pull request, cost' },
);

export const Display = Type.Object(
  {
    phone: Type.Optional(Type.String({ maxLength: 32, description: 'masked phone, e.g. +1415•••1234' })),
    prompt: Type.Optional(Type.String({ maxLength: 64, description: 'prompt, truncated' })),
    duration: Type.Optional(Type.String({ maxLength: 32, description: 'start to completion, e.g. 3m12s' })),
  },
  { description: 'values for kubectl columns the schema cannot compute; written by the controller' },
);

export const SessionStatus = Type.Object(
  {
    phase: Type.Optional(enumOf(PHASES, 'lifecycle phase')),
    observedGeneration: Type.Optional(
      Type.Integer({ minimum: 0, description: 'metadata.generation the controller last acted on' }),
    ),
    conditions: Type.Optional(
      Type.Array(Condition, {
        maxItems: LIMITS.conditions,
        description: 'the latest observations, one per type (Admitted, Started, Finished)',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['type'],
      }),
    ),
    podName: Type.Optional(Type.String({ maxLength: 253, description: 'the runner Pod, in the runner namespace' })),
    startTime: Type.Optional(timestamp('when the runner pod was created, or a live one was bound to this Session')),
    runnerStart: Type.Optional(
      enumOf(['cold', 'warm'] as const, 'cold: a runner Pod was made for this Session; warm: a live one was bound'),
    ),
    runnerRestarts: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1,
        description: 'how many times a lost runner Pod was replaced during this run (a second loss ends it)',
      }),
    ),
    completionTime: Type.Optional(timestamp('when a terminal phase was reached')),
    progress: Type.Optional(
      Type.Array(ProgressItem, { maxItems: LIMITS.progressItems, description: 'the latest steps of the agent' }),
    ),
    pending: Type.Optional(Pending),
    egress: Type.Optional(
      Type.Array(EgressRecord, {
        maxItems: LIMITS.egressRecords,
        description: "the run's connections through the egress proxy, one record per caller and destination",
      }),
    ),
    result: Type.Optional(Result),
    display: Type.Optional(Display),
  },
  { description: 'what the controller and the runner report' },
);

export type Phase = (typeof PHASES)[number];
export type SessionStatus = Static<typeof SessionStatus>;
export type Condition = Static<typeof Condition>;
export type ProgressItem = Static<typeof ProgressItem>;
export type Pending = Static<typeof Pending>;
export type Result = Static<typeof Result>;
export type Media = Static<typeof Media>;
export type EgressRecord = Static<typeof EgressRecord>;
