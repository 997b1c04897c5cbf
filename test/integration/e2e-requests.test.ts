// End to end: tool permissions (allow / deny with a reason) and questions answered by number.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: ['+14155550131', '+14155550132', '+14155550133'] });
}, 90_000);
afterAll(async () => e2e?.stop());

async function sessionOf(phone: string) {
  return (await e2e.list()).filter((s) => s.spec.phone === phone).at(-1)!;
}
const checkout = (workspace: string, file: string) =>
  join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, workspace, 'repo', file);

describe('end to end: permissions and questions', () => {
  it('a shell command is asked; allow → it runs and the agent continues', async () => {
    const phone = e2e.phone('+14155550131');
    await phone.send('script:\ntool: Bash {"command":"echo ok > ran.txt"}\nsay: ran it');
    const ask = await phone.next(/🔐.*echo ok > ran\.txt/s);
    expect(ask.body).toMatch(/allow/);
    await phone.send('allow');
    await phone.next(/ran\.txt/);
    await phone.next(/Reply \*approve\*/);
    const session = await sessionOf(phone.number);
    expect(session.spec.decisions?.[0]).toMatchObject({ action: 'allow' });
    expect(existsSync(checkout(session.spec.workspace, 'ran.txt'))).toBe(true);
    await phone.send('reject');
    await phone.next(/undone/i);
  });

  it('deny with a reason → the command never runs and the agent goes on', async () => {
    const phone = e2e.phone('+14155550132');
    await phone.send(
      'script:\ntool: Bash {"command":"echo no > denied.txt"}\nprogress: carrying on without it\nsay: skipped the ' +
        'command',
    );
    await phone.next(/🔐/);
    await phone.send('deny not on my laptop');
    // The progress line may ride in the result's message (docs/relay.md, "Budgets").
    await phone.next(/skipped the command/);
    expect(phone.received().some((m) => /carrying on without it/.test(m.body))).toBe(true);
    const session = await sessionOf(phone.number);
    expect(session.status?.phase).toBe('Succeeded');
    expect(session.spec.decisions?.[0]).toMatchObject({ action: 'deny', message: 'not on my laptop' });
    expect(existsSync(checkout(session.spec.workspace, 'denied.txt'))).toBe(false);
  });

  it('a question with options → "2" → the agent receives option 2', async () => {
    const phone = e2e.phone('+14155550133');
    await phone.send('script:\nask: Which database should the cache use? | Redis | In-memory\nsay: will use it');
    const question = await phone.next(/❓ Which database should the cache use\?/);
    expect(question.body).toMatch(/1\. Redis/);
    expect(question.body).toMatch(/2\. In-memory/);
    await phone.send('2');
    const session = await (async () => {
      await phone.next(/✅|Done/);
      return sessionOf(phone.number);
    })();
    expect(session.spec.decisions?.[0]).toMatchObject({
      action: 'answer',
      answers: { 'Which database should the cache use?': 'In-memory' },
    });
    expect(session.status?.phase).toBe('Succeeded');
  });
});
