// A replacement runner's choices (runner-image/restart.ts): which Sessions it picks up where they stopped, which
// stopped runs it leaves to a replacement, what the resumed agent is told. The lost runner's answer replayed once:
// runner-host.test.ts.
import { describe, expect, it } from 'vitest';
import type { Decision, Pending, Session } from '../../common/session/schema.ts';
import { continuePrompt, isContinuePrompt } from '../../runner-image/continue-prompt.ts';
import { answerWords, leftForReplacement, planApproved, REPLACED, restartedIn } from '../../runner-image/restart.ts';

const AT = '2030-01-02T03:04:05.000Z';
const sessionIn = (status: Session['status'], decisions: Decision[] = []) =>
  ({ metadata: { name: 's' }, spec: { decisions }, status }) as unknown as Session;

describe('which runs a replacement runner picks up', () => {
  it(`Working, AwaitingApproval and Publishing once replaced; Starting, final phases and first runners \
start as ever`, () => {
    for (const phase of ['Working', 'AwaitingApproval', 'Publishing'] as const)
      expect(restartedIn(sessionIn({ phase, runnerRestarts: 1 }))).toBe(phase);
    expect(restartedIn(sessionIn({ phase: 'Starting', runnerRestarts: 1 }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Succeeded', runnerRestarts: 1 }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Working' }))).toBeUndefined();
    expect(restartedIn(sessionIn({ phase: 'Working', runnerRestarts: 0 }))).toBeUndefined();
  });

  it('a first runner stopped by its Pod going, or handed over, leaves the run; a replacement ends it', () => {
    const first = sessionIn({ phase: 'Working', podName: 's-runner' });
    expect(leftForReplacement('SIGTERM', first, 's-runner')).toMatch(/left for the new runner Pod/);
    expect(leftForReplacement('cancel', first, 's-runner')).toBeUndefined();
    expect(leftForReplacement('deleted', first, 's-runner')).toBeUndefined();
    const handedOver = sessionIn({ phase: 'Working', podName: 's-runner-1', runnerRestarts: 1 });
    expect(leftForReplacement(REPLACED, handedOver, 's-runner')).toMatch(/goes on in runner Pod s-runner-1/);
    expect(leftForReplacement('SIGTERM', handedOver, 's-runner')).toMatch(/goes on in runner Pod s-runner-1/);
    expect(leftForReplacement('SIGTERM', handedOver, 's-runner-1')).toBeUndefined();
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
    expect(answerWords(question, decided({ action: 'deny' }))).toBe(
      'The user did not answer. Do not assume an answer.',
    );
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
