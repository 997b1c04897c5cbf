// A replacement runner's choices (runner-image/restart.ts): which Sessions it picks up where they stopped, what the
// resumed agent is told, and the answer given for the lost runner replayed once — through the real RunnerHost,
// Requests and StatusWriter on an in-memory API server; the test is the phone.
import { describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { createLogger, makeRedactor } from '../../common/log.ts';
import type { Decision, Pending, Session } from '../../common/session/schema.ts';
import { RunnerHost } from '../../runner-image/agent-callbacks.ts';
import { continuePrompt, isContinuePrompt } from '../../runner-image/continue-prompt.ts';
import { parsePolicy } from '../../runner-image/policy.ts';
import { Requests, type Answered } from '../../runner-image/requests.ts';
import { answerWords, planApproved, restartedIn } from '../../runner-image/restart.ts';
import { StatusWriter } from '../../runner-image/status.ts';
import { MemorySessions } from '../support/memory-sessions.ts';

const log = createLogger({ component: 'test', level: 'silent' });
const AT = '2030-01-02T03:04:05.000Z';
const sessionIn = (status: Session['status'], decisions: Decision[] = []) =>
  ({ metadata: { name: 's' }, spec: { decisions }, status }) as unknown as Session;

describe('which runs a replacement runner picks up', () => {
  it('Working, AwaitingApproval and Publishing once replaced; Starting, final phases and first runners start as ever', () => {
    for (const phase of ['Working', 'AwaitingApproval', 'Publishing'] as const)
      expect(restartedIn(sessionIn({ phase, runnerRestarts: 1 }))).toBe(phase);
    expect(restartedIn(sessionIn({ phase: 'Starting', runnerRestarts: 1 }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Succeeded', runnerRestarts: 1 }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Working' }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Working', runnerRestarts: 0 }))).toBeUndefined();
  });

  it('a plan approved before the restart is carried out, not planned again', () => {
    const decision = (requestId: string, action: Decision['action']) => ({ requestId, action, at: AT });
    expect(planApproved(sessionIn({}, [decision('plan-1', 'revise'), decision('plan-2', 'approve')]))).toBe(true);
    expect(planApproved(sessionIn({}, [decision('plan-1', 'revise'), decision('tool-2', 'allow')]))).toBe(false);
  });
});

describe('what the resumed agent is told', () => {
  const pending = (fields: Partial<Pending>): Pending => ({ id: 'r', kind: 'tool', createdAt: AT, ...fields });
  const decided = (fields: Partial<Decision>): Decision => ({ requestId: 'r', action: 'allow', at: AT, ...fields });

  it("the phone's answer in plain words, inside a continue turn the scripted model knows", () => {
    expect(answerWords(pending({ tool: 'Bash' }), decided({}))).toBe('The user allowed your Bash call; make it again.');
    expect(answerWords(pending({ tool: 'Bash' }), decided({ action: 'deny', message: 'not on main' }))).toBe(
      'The user denied your Bash call: not on main',
    );
    const question = pending({ kind: 'question' });
    expect(answerWords(question, decided({ action: 'answer', answers: { 'Which theme?': 'Dark' } }))).toBe(
      'The user answered your question: "Which theme?" → "Dark".',
    );
    expect(answerWords(question, decided({ action: 'deny' }))).toBe('The user did not answer. Do not assume an answer.');
    expect(answerWords(pending({ kind: 'plan' }), decided({ action: 'approve' }))).toBe(
      'The user approved your plan; carry it out.',
    );
    expect(answerWords(pending({ kind: 'plan' }), decided({ action: 'revise', message: 'tests first' }))).toContain(
      'tests first',
    );
    const prompt = continuePrompt('The user allowed your Bash call; make it again.');
    expect(isContinuePrompt(prompt)).toBe(true);
    expect(prompt).toContain('The user allowed your Bash call; make it again.');
    expect(isContinuePrompt('script: continue')).toBe(false);
  });
});

async function hostReplaying(answered: Answered, spentBefore?: number) {
  const memory = new MemorySessions('ns');
  await memory.create('ns', 's', { phone: '+14155550123', prompt: 'p', repo: { url: 'x' }, workspace: 'w' });
  await memory.patchStatus('ns', 's', { phase: 'Working' });
  const status = new StatusWriter({
    sessions: memory as unknown as SessionClient,
    namespace: 'ns',
    name: 's',
    redact: makeRedactor(),
    log,
    batchMs: 0,
  });
  const asked: Pending[] = [];
  memory.onChange((_key, session) => {
    if (!session) return;
    status.noticed(session);
    const open = session.status?.phase === 'AwaitingApproval' ? session.status.pending : undefined;
    if (!open || asked.some((p) => p.id === open.id)) return;
    asked.push(open);
    const decisions = [...(session.spec.decisions ?? []), { requestId: open.id, action: 'deny' as const, at: AT }];
    setImmediate(() => void memory.patch('ns', 's', { spec: { decisions } }));
  });
  await status.load();
  const stop = new AbortController();
  const host = new RunnerHost({
    status,
    requests: new Requests(status, stop.signal, answered),
    policy: parsePolicy(undefined),
    repoDir: '/nowhere/repo',
    log,
    tools: {},
    onFinal: () => undefined,
    costPauseUsd: 1,
    spentBefore,
  });
  const call = (input: Record<string, unknown>) => host.canUseTool({ id: 'x', tool: 'Bash', input }, stop.signal);
  return { host, asked, call, stop };
}

describe("the lost runner's answered request", () => {
  // As the Session stores it: its keys in the API server's order.
  const answered: Answered = {
    pending: { createdAt: AT, id: 'tool-1', input: '{"command":"make"}', inputChars: 18, kind: 'tool', tool: 'Bash' },
    decision: { requestId: 'tool-1', action: 'allow', at: AT },
  };

  it('answers the identical request once without asking; a second, or another, is asked', async () => {
    const { asked, call, stop } = await hostReplaying(answered);
    expect(await call({ command: 'make' })).toMatchObject({ behavior: 'allow' });
    expect(asked).toEqual([]);
    expect(await call({ command: 'make' })).toMatchObject({ behavior: 'deny' });
    expect(await call({ command: 'make test' })).toMatchObject({ behavior: 'deny' });
    expect(asked.map((p) => p.input)).toEqual(['{"command":"make"}', '{"command":"make test"}']);
    stop.abort();
  });

  it('counts the spend before the restart on, without pausing again for a threshold already passed', async () => {
    const { host, stop } = await hostReplaying(answered, 1.5);
    expect(host.spentUsd).toBe(1.5);
    expect(host.costHeld()).toBe(false);
    expect(host.resultOf({ ok: true, exitCode: 0 }).costUsd).toBe(1.5);
    stop.abort();
  });
});
