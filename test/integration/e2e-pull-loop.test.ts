// End to end, the pull request as the unit of work: a command opens a pull request, a follow-up adds
// a commit to it, a failing check reaches the phone through a signed GitHub webhook, *fix* adds a third
// commit whose prompt carries the check's output, passing checks are told, and *merge* merges it.
// Real Claude Code (the test's scripted model), real git behind the forge, the GitHub stand-in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { relayCaughtUp } from '../support/caught-up.ts';
import { startE2E, type E2E } from '../support/e2e.ts';
import {
  bareGit,
  buttonTitles,
  commitsOn,
  conversation,
  fileAt,
  messageOf,
  parentOf,
  tipOf,
} from '../support/pull-loop.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const PHONE = '+14155550261';
const PERSON = { phone: PHONE, name: 'Ada Lovelace', email: 'ada@example.com', github: 'ada-l', merge: true };
const FAILURE = 'farewell.test.js: expected "Bye, Ada!" but got undefined';

const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    numbers: [PHONE],
    relayEnv: { TETHER_PEOPLE: JSON.stringify([PERSON]), TETHER_GITHUB_MERGE: 'whenGreen' },
    podEnv: model.env(),
    githubWebhooks: true,
  });
}, 120_000);
afterAll(async () => e2e?.stop());

const mine = async () => (await e2e.list()).filter((s) => s.spec.phone === PHONE);

describe('end to end: the pull request loop', () => {
  it('command → PR → follow-up commit → check fails → fix → third commit → checks pass → merge', async () => {
    const chat = conversation(e2e.phone(PHONE));
    const { phone } = chat;

    // A first command opens pull request #1, with its requester on the commit, the body and as reviewer.
    await chat.send(
      'script:\nwrite: src/farewell.js = export const bye = (n) => `Bye, ${n}!`;\\n\nsay: Added a farewell function.',
    );
    await phone.next(/^On it/);
    await phone.next(/Reply \*approve\*/);
    await chat.send('approve');
    await phone.next(/Pull request opened: \S+\/pull\/1\b/, 120_000);
    const [first] = await mine();
    const branch = first!.status!.result!.branch!;
    expect(branch).toBe(`tether/${first!.metadata.name}`);
    expect(first!.status!.result).toMatchObject({ prNumber: 1, pushed: 'opened' });
    expect(first!.spec).toMatchObject({ channel: 'whatsapp', requester: { name: PERSON.name, github: PERSON.github } });
    const [one] = commitsOn(e2e.remote, branch);
    expect(first!.status!.result!.commit).toBe(one);
    expect(messageOf(e2e.remote, one!)).toContain(`Co-authored-by: ${PERSON.name} <${PERSON.email}>`);
    expect(e2e.github.pulls).toHaveLength(1);
    const pull = e2e.github.pulls[0]!;
    expect(pull.body).toContain(PERSON.name);
    expect(pull.body).not.toContain(PHONE);
    expect(pull.requestedReviewers).toEqual([PERSON.github]);

    // A follow-up continues pull request #1: one more commit on the same branch, no second pull request.
    await chat.send(
      "script:\nwrite: src/farewell.test.js = import { bye } from './farewell.js';\\n\nsay: Added a test for bye.",
    );
    await phone.next(/^On it.*continuing PR #1/);
    await phone.next(/Pull request #1 with these changes: 2 files changed/);
    await phone.next(/Reply \*approve\* to push to pull request #1 /);
    await chat.send('approve');
    const pushed = await phone.next(/Pushed to pull request #1\b/, 120_000);
    expect(pushed.body).toMatch(/2 files? changed/);
    const [, second] = await mine();
    expect(second!.spec.pullRequest).toMatchObject({ number: 1, branch });
    expect(second!.status!.result).toMatchObject({ prNumber: 1, pushed: 'added' });
    const two = commitsOn(e2e.remote, branch);
    expect(two).toHaveLength(2);
    expect(parentOf(e2e.remote, two[1]!)).toBe(two[0]);
    expect(fileAt(e2e.remote, two[1]!, 'src/farewell.js')).toContain('Bye');
    expect(e2e.github.pulls).toHaveLength(1);

    // A check fails on the new head: the phone is told once, with its name and first lines, and three replies.
    const failedRun = await e2e.github.createCheckRun('acme', 'sample', {
      headSha: two[1]!,
      name: 'unit tests',
      status: 'completed',
      conclusion: 'failure',
      output: { title: '1 test failed', summary: `${FAILURE}\n    at farewell.test.js:4`, text: 'node --test\n' },
    });
    const failed = await phone.next(/unit tests/);
    expect(failed.body).toMatch(/#1/);
    expect(failed.body).toContain(FAILURE);
    expect(buttonTitles(failed)).toEqual(['fix', 'ignore', 'details']);

    // *fix*: a Session on the branch whose prompt carries the check's output (fetched by the supervisor).
    await chat.tap(failed, 'fix');
    await phone.next(/^On it/);
    await phone.next(/Reply \*approve\*/);
    const [, , fixing] = await mine();
    expect(fixing!.spec.prompt).toMatch(/Fix the failing checks on pull request #1/);
    expect(fixing!.spec.pullRequest).toMatchObject({ number: 1, branch });
    expect(fixing!.spec.fix).toEqual({ kind: 'checks', headSha: two[1], checkRuns: [failedRun.id] });
    const asked = JSON.stringify(model.turns('Fix the failing checks').map((t) => t.body));
    expect(asked).toContain(JSON.stringify(FAILURE).slice(1, -1));
    await chat.send('approve');
    await phone.next(/Pushed to pull request #1\b/, 120_000);
    const three = commitsOn(e2e.remote, branch);
    expect(three).toHaveLength(3);
    expect(parentOf(e2e.remote, three[2]!)).toBe(two[1]);
    expect(tipOf(e2e.remote, branch)).toBe(three[2]);

    // The checks pass on the fixed head: told, once the fix was asked.
    await e2e.github.createCheckRun('acme', 'sample', {
      headSha: three[2]!,
      name: 'unit tests',
      status: 'completed',
      conclusion: 'success',
      output: { title: 'all passed', summary: '2 tests passed' },
    });
    await phone.next(/Checks pass on pull request #1 /);

    // *merge*: the stand-in merges the branch into main, and the phone hears "merged".
    await chat.send('merge');
    await phone.next(/merged/i);
    expect(e2e.github.pulls[0]).toMatchObject({ state: 'closed', merged: true });
    expect(fileAt(e2e.remote, 'main', 'src/farewell.js')).toContain('Bye');
    expect(fileAt(e2e.remote, 'main', 'src/farewell.test.js')).toContain('bye');
    expect(bareGit(e2e.remote, 'diff', '--stat', three[2]!, 'main')).toBe('');

    const loop = chat.transcript();
    const status = await relayCaughtUp(e2e, phone);
    const received = phone.received().filter((m) => m !== status);
    console.log(`phone transcript (pull request loop, ${received.length} messages received):\n${loop.join('\n')}`);
    expect(received.filter((m) => m.body.includes(FAILURE))).toHaveLength(1);
    expect(received.filter((m) => /merged/i.test(m.body)).length).toBeGreaterThanOrEqual(1);
    for (const message of received) expect(message.body.length).toBeLessThanOrEqual(1600);
    expect(e2e.github.pulls).toHaveLength(1);
  }, 600_000);
});
