// End to end, the pull request's branch moves under the loop: a review asking for changes reaches the
// phone and *fix* answers it with one more commit; a teammate's push while a follow-up waits for
// approval puts the follow-up on the new tip (clean) or stops it with the changes kept (conflict).
// Real Claude Code (the test's scripted model), real git behind the forge, the GitHub stand-in.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import {
  buttonTitles,
  commitsOn,
  conversation,
  fileAt,
  parentOf,
  pushAsSomeoneElse,
  tipOf,
} from '../support/pull-loop.ts';
import type { Phone } from '../support/e2e.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const PHONES = { review: '+14155550271', clean: '+14155550272', conflict: '+14155550273' };
const ASKED = 'Please rename it before this goes in.';
const RENAME = 'Rename bye to farewell: the module is called farewell';

const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: Object.values(PHONES), podEnv: model.env(), githubWebhooks: true });
}, 120_000);
afterAll(async () => e2e?.stop());

const mine = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone);

/** A command approved into a new pull request; returns its number and branch. */
async function openPull(phone: Phone, file: string, content: string) {
  await phone.send(`script:\nwrite: ${file} = ${content}\nsay: Wrote ${file}.`);
  await phone.next(/Reply \*approve\*/);
  await phone.send('approve');
  await phone.next(/Pull request opened: \S+\/pull\/\d+/, 120_000);
  const result = (await mine(phone.number)).at(-1)!.status!.result!;
  expect(result.pushed).toBe('opened');
  return { number: result.prNumber!, branch: result.branch! };
}

/**
 * A follow-up writing `file`, and while its changes wait for approval a teammate's push of `theirs` to
 * the branch; then *approve*. Returns the teammate's commit.
 */
async function followUpRacingTeammate(phone: Phone, branch: string, file: string, theirs: Record<string, string>) {
  await phone.send(`script:\nwrite: ${file}\nsay: Wrote it.`);
  await phone.next(/Reply \*approve\*/);
  const commit = await pushAsSomeoneElse(e2e.remoteUrl, e2e.githubToken, branch, theirs, 'Teammate: a change');
  await phone.send('approve');
  return commit;
}

describe('end to end: the pull request branch moves', () => {
  it('a review asking for changes reaches the phone; *fix* adds a commit answering it', async () => {
    const chat = conversation(e2e.phone(PHONES.review));
    const { phone } = chat;
    const { number, branch } = await openPull(phone, 'src/farewell.js', 'export const bye = (n) => n;\\n');
    const head = tipOf(e2e.remote, branch);

    const review = await e2e.github.submitReview('acme', 'sample', number, {
      user: 'grace-h',
      state: 'CHANGES_REQUESTED',
      body: `${ASKED}\nThe name bye says nothing.`,
      comments: [
        { path: 'src/farewell.js', line: 1, body: RENAME },
        { path: 'src/farewell.js', line: 1, body: 'And say goodbye, not the name alone.' },
      ],
    });
    const told = await phone.next(/grace-h/);
    expect(told.body).toMatch(new RegExp(`#${number}\\b`));
    expect(told.body).toMatch(/asked for changes/);
    expect(told.body).toContain(ASKED);
    expect(buttonTitles(told)).toEqual(['fix', 'ignore', 'details']);

    await chat.tap(told, 'details');
    expect((await phone.next(/^Review by grace-h/)).body).toContain('The name bye says nothing');

    await chat.tap(told, 'fix');
    await phone.next(/^On it/);
    await phone.next(/Reply \*approve\*/);
    const fixing = (await mine(phone.number)).at(-1)!;
    expect(fixing.spec.prompt).toMatch(new RegExp(`Address the review on pull request #${number}\\b`));
    expect(fixing.spec.pullRequest).toMatchObject({ number, branch });
    expect(fixing.spec.fix).toEqual({ kind: 'review', headSha: head, reviewId: review.id });
    const asked = JSON.stringify(model.turns('Address the review').map((t) => t.body));
    expect(asked).toContain(RENAME);
    expect(asked).toContain('say goodbye');
    await chat.send('approve');
    await phone.next(new RegExp(`Pushed to pull request #${number}\\b`), 120_000);
    const commits = commitsOn(e2e.remote, branch);
    expect(commits).toHaveLength(2);
    expect(parentOf(e2e.remote, commits[1]!)).toBe(head);

    // The notice was answered: a second tap on *fix* starts nothing.
    const sessions = (await mine(phone.number)).length;
    await chat.tap(told, 'fix');
    await phone.next(/already/i);
    expect(await mine(phone.number)).toHaveLength(sessions);
    expect(e2e.github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
    console.log(`phone transcript (review → fix):\n${chat.transcript().join('\n')}`);
  }, 300_000);

  it("a teammate's push meanwhile: the follow-up goes on the new tip, and the phone is told", async () => {
    const phone = e2e.phone(PHONES.clean);
    const { number, branch } = await openPull(phone, 'src/one.js', 'export const one = 1;\\n');

    const theirs = await followUpRacingTeammate(phone, branch, 'src/two.js = export const two = 2;\\n', {
      'docs/notes.md': '# Notes\n\nA teammate was here.\n',
    });
    const pushed = await phone.next(new RegExp(`Pushed to pull request #${number}\\b`), 120_000);
    expect(pushed.body).toContain('Someone else had pushed to it meanwhile: your changes went on top of theirs.');
    const progress = phone.received().filter((m) => m.body.includes(`Someone else pushed to pull request #${number}`));
    expect(progress).toHaveLength(1);

    const follow = (await mine(phone.number)).at(-1)!;
    expect(follow.status!.result).toMatchObject({ prNumber: number, pushed: 'onNewTip' });
    const tip = tipOf(e2e.remote, branch);
    expect(follow.status!.result!.commit).toBe(tip);
    expect(parentOf(e2e.remote, tip)).toBe(theirs);
    expect(fileAt(e2e.remote, tip, 'docs/notes.md')).toContain('A teammate was here.');
    expect(fileAt(e2e.remote, tip, 'src/two.js')).toContain('two = 2');
    expect(fileAt(e2e.remote, tip, 'src/one.js')).toContain('one = 1');
    expect(e2e.github.pulls.filter((p) => p.head === branch)).toHaveLength(1);
  }, 300_000);

  it("a teammate's conflicting push: nothing pushed, the phone told, the changes kept on the workspace", async () => {
    const phone = e2e.phone(PHONES.conflict);
    const { number, branch } = await openPull(phone, 'src/color.js', "export const color = 'red';\\n");

    const theirs = await followUpRacingTeammate(phone, branch, "src/color.js = export const color = 'blue';\\n", {
      'src/color.js': "export const color = 'green';\n",
    });
    const stopped = await phone.next(/^❌/, 120_000);
    expect(stopped.body).toMatch(
      new RegExp(
        '^❌ The changes were not published: Someone else pushed to tether/\\S+ meanwhile and changed the same ' +
          'parts of src/color\\.js; nothing was pushed\\.\\nThey are kept on the workspace\\.',
      ),
    );
    expect(stopped.body).not.toMatch(/\bat \S+:\d+/);

    const follow = (await mine(phone.number)).at(-1)!;
    expect(follow.status!.phase).toBe('Failed');
    expect(follow.spec.pullRequest).toMatchObject({ number, branch });
    expect(tipOf(e2e.remote, branch)).toBe(theirs);
    expect(fileAt(e2e.remote, branch, 'src/color.js')).toContain('green');
    const checkout = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, follow.spec.workspace, 'repo');
    expect(readFileSync(join(checkout, 'src/color.js'), 'utf8')).toContain('blue');
  }, 300_000);
});
