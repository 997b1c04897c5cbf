// End to end, plan first and several repositories: the real Claude Code in plan mode against the
// scripted model, signed webhooks, fake Twilio and GitHub, two local remotes.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E, type Phone } from '../support/e2e.ts';

let e2e: E2E;
let second: string;
beforeAll(async () => {
  // both on the stack's forge
  e2e = await startE2E({ numbers: ['+14155550131', '+14155550132', '+14155550133'], moreRepos: ['second'] });
  second = join(dirname(e2e.remote), 'second.git');
}, 90_000);
afterAll(async () => e2e?.stop());

/** What Sessions name: the forge's URL of the second repository. */
const secondUrl = () => `${new URL(e2e.remoteUrl).origin}/acme/second.git`;
const show = (remote: string, rev: string) =>
  execFileSync('git', ['-c', `safe.directory=${remote}`, '-C', remote, 'show', rev], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
const transcript = (phone: Phone) =>
  phone
    .received()
    .map((m) => `bot > ${m.body}${m.mediaUrls.length ? ' [picture]' : ''}`)
    .join('\n');
const mine = async (phone: Phone) => (await e2e.list()).filter((s) => s.spec.phone === phone.number);

describe('end to end: plan first', () => {
  it(`plan: → numbered plan → a typed revision → a new plan \
→ approve → the run → changes → approve → pull request`, async () => {
    const phone = e2e.phone('+14155550131');
    await phone.send(
      'plan: script:\nplan: ## Steps\\n- Add *planned.txt*\\n- Say done\nwrite: planned.txt = planned\nsay: done',
    );
    await phone.next(/^On it \(session [0-9a-f]{4}\) in \*sample\*\. The plan comes first/);
    const first = await phone.next(/The agent's plan:/);
    // a message of its own, or in front of the plan when both came at once
    expect(transcript(phone)).toContain('⏳ Writing the plan');
    expect(first.body).toMatch(
      new RegExp(
        /\*Steps\*\n1\. Add \*planned\.txt\*\n2\. Say done\n\n/.source +
          /Reply \*approve\* to run it, \*reject\* to drop it, or write what to change/.source,
      ),
    );

    await phone.send('Also keep the README  as it is');
    const revised = await phone.next(/The agent's plan:/);
    expect(revised.body).toContain('2. Say done\n3. Also keep the README as it is');
    expect((await mine(phone))[0]!.spec.decisions?.map((d) => d.action)).toEqual(['revise']);

    await phone.send('approve');
    await phone.next(/1 file changed/);
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened: https:\/\/\S+\/pull\/\d+/);
    const [session] = await mine(phone);
    expect(session!.spec.mode).toBe('plan');
    expect(session!.status?.phase).toBe('Succeeded');
    expect(
      show(e2e.remote, `${e2e.github.pulls.find((p) => p.head.includes(session!.metadata.name!))!.head}:planned.txt`),
    ).toBe('planned');
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
    console.log(`phone transcript (plan first):\n${transcript(phone)}`);
  }, 180_000);

  it('reject of a plan ends the session; nothing runs', async () => {
    const phone = e2e.phone('+14155550132');
    await phone.send('plan script:\nplan: Rewrite everything\nwrite: rejected.txt = no');
    await phone.next(/The agent's plan:\nRewrite everything/);
    await phone.send('reject');
    await phone.next(/Plan dropped; nothing was changed/);
    const [session] = await mine(phone);
    expect(session!.status?.phase).toBe('Rejected');
    expect(session!.status?.result?.diffStat).toBeUndefined();
  }, 120_000);
});

describe('end to end: several repositories', () => {
  it(`@second works in the second repository and its own workspace; repo second sets the default; an unknown name gets \
the list`, async () => {
    const phone = e2e.phone('+14155550133');
    await phone.send('@second script:\nwrite: second.txt = in the second repo\nsay: wrote it');
    await phone.next(/^On it \(session [0-9a-f]{4}\) in \*second\*\./);
    await phone.next(/Reply \*approve\* to open a pull request/);
    await phone.send('approve');
    await phone.next(/Pull request opened/);
    const [first] = await mine(phone);
    expect(first!.spec).toMatchObject({
      repo: { url: secondUrl() },
      workspace: `ws-${e2e.stack.phoneHash(phone.number)}-second`,
    });
    const pull = e2e.github.pulls.find((p) => p.head.includes(first!.metadata.name!))!;
    expect(show(second, `${pull.head}:second.txt`)).toBe('in the second repo');
    expect(() => show(e2e.remote, pull.head)).toThrow();

    await phone.send('repo ../nope');
    expect((await phone.next(/There is no repository named "\.\.\?nope"/)).body).toContain(
      '• sample (your default)\n• second',
    );
    await phone.send('repo second');
    await phone.next(/now work on \*second\*/);
    await phone.send('status');
    await phone.next(/Repositories: sample, \*second\* \(your default\)/);
    await phone.send('script:\nsay: on the default, which is now second');
    await phone.next(/on the default, which is now second/);
    const latest = (await mine(phone)).at(-1)!;
    expect(latest.spec).toMatchObject({
      repo: { url: secondUrl() },
      workspace: first!.spec.workspace,
      resumeAgentSession: first!.status?.result?.agentSessionId,
    });
    console.log(`phone transcript (repositories):\n${transcript(phone)}`);
  }, 180_000);
});
