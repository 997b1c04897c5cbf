// End to end through relay (signed webhooks, fake Twilio), controller, node agent and runner
// (the real Claude Code against the scripted model, local remote, fake GitHub): what the phone receives, in order.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { eventually } from '../support/eventually.ts';

let e2e: E2E;
beforeAll(async () => {
  // The message count below holds for the relay's default progress cadence, not the harness's shortened one.
  e2e = await startE2E({
    numbers: ['+14155550123', '+14155550124', '+14155550125', '+14155550126'],
    relayEnv: { RELAY_PROGRESS_BATCH: '15s' },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

const git = (...args: string[]) =>
  execFileSync('git', ['-c', `safe.directory=${e2e.remote}`, '-C', e2e.remote, ...args], { encoding: 'utf8' });

describe('end to end: approve and reject', () => {
  it('command → progress → changes with diff image → approve → pull request', async () => {
    const phone = e2e.phone('+14155550123');
    const sentAt = Date.now();
    await phone.send(
      'script:\nprogress: Reading src/greet.js\nwrite: src/farewell.js = export const bye = (n) => `Bye, ' +
        '${n}!`;\nprogress: Running npm test (1 passed)\nsay: Added a farewell function.',
    );

    const onIt = await phone.next(/^On it \(session [0-9a-f]{4}\)/);
    expect(onIt.mediaUrls).toEqual([]);
    console.log(`first reply after ${onIt.at - sentAt} ms`);
    const diff = await phone.next(/1 file changed/);
    // The first step goes at once, or rides in the review's message when both arrive together.
    expect(
      phone
        .received()
        .slice(0, phone.received().indexOf(diff) + 1)
        .filter((m) => /Reading src\/greet\.js/.test(m.body)),
    ).toHaveLength(1);
    expect(diff.mediaUrls).toHaveLength(1);
    const image = await fetch(diff.mediaUrls[0]!);
    expect(image.status).toBe(200);
    expect(image.headers.get('content-type')).toBe('image/png');
    const png = Buffer.from(await image.arrayBuffer());
    mkdirSync('test-results/diff-pages', { recursive: true });
    writeFileSync('test-results/diff-pages/e2e-approve.png', png);
    expect(png.readUInt32BE(16)).toBe(780);
    expect(png.readUInt32BE(20)).toBeLessThan(600);
    await phone.next(/Reply \*approve\*/);

    await phone.send('approve');
    const done = await phone.next(/Pull request opened: https:\/\/\S+\/pull\/1/);
    expect(done.body).toMatch(/Took \d+/);
    expect(e2e.github.pulls).toHaveLength(1);
    const pull = e2e.github.pulls[0]!;
    expect(pull).toMatchObject({ owner: 'acme', repo: 'sample', base: 'main' });
    expect(git('show', `${pull.head}:src/farewell.js`)).toContain('Bye');
    const [session] = await e2e.list();
    expect(session!.status?.phase).toBe('Succeeded');
    expect(session!.status?.result?.prUrl).toBe(pull.html_url);
    console.log(
      `phone transcript (approve):\n${phone
        .received()
        .map((m) => `bot > ${m.body}${m.mediaUrls.length ? ' [picture]' : ''}`)
        .join('\n')}`,
    );
    // A simple change reaches its pull request in at most five messages (docs/architecture.md, "What the phone sees").
    expect(
      phone.received().length,
      phone
        .received()
        .map((m) => m.body)
        .join('\n'),
    ).toBeLessThanOrEqual(5);
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
  });

  it('reject reverts the tree and clears the queue; the next command runs on the clean tree', async () => {
    const phone = e2e.phone('+14155550124');
    await phone.send('script:\nprogress: writing junk\nsleep: 1500\nwrite: junk.txt = throw away\nsay: wrote junk');
    await phone.next(/writing junk/);
    await phone.send('script:\nsay: queued one');
    await phone.next(/Queued \(#\d\)/);
    await phone.next(/Reply \*approve\*/);
    await phone.send('reject');
    await phone.next(/undone|reverted|rejected/i);
    await eventually(() =>
      expect(
        phone.received().filter((m) => /Dropped your queued command "script: say: queued one"/.test(m.body)),
      ).toHaveLength(1),
    );

    await phone.send('script:\nprogress: after reject\nsay: nothing to change');
    // A quick run's progress may ride in the message with its result.
    await phone.next(/nothing to change/);
    expect(phone.received().filter((m) => /after reject/.test(m.body))).toHaveLength(1);
    const mine = (await e2e.list()).filter((s) => s.spec.phone === phone.number);
    expect(mine.map((s) => s.status?.phase)).toEqual(['Rejected', 'Cancelled', 'Succeeded']);
    const checkout = join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, mine[0]!.spec.workspace, 'repo');
    expect(existsSync(join(checkout, 'README.md'))).toBe(true);
    expect(existsSync(join(checkout, 'junk.txt'))).toBe(false);
    expect(e2e.github.pulls.filter((p) => p.head.includes(mine[0]!.metadata.name!))).toEqual([]);
    console.log(
      `phone transcript (reject):\n${phone
        .received()
        .map((m) => `bot > ${m.body}`)
        .join('\n')}`,
    );
  });

  it(`a long diff: 3 pages, the rest counted; diff \
<file> sends that file's pages, an unknown name the list`, async () => {
    const phone = e2e.phone('+14155550126');
    const body = Array.from({ length: 45 }, (_, i) => `line ${i} of the file`).join('\\n');
    await phone.send(
      `script:\n${['a', 'b', 'c', 'd'].map((f) => `write: ${f}.txt = ${body}`).join('\n')}\nsay: wrote four files`,
    );
    await phone.next(/4 files changed/, 120_000);
    const last = await phone.next(/more files? not shown — reply \*diff <file>\*/);
    await phone.next(/Reply \*approve\*/);
    const pages = phone.received().filter((m) => m.mediaUrls.length);
    expect(pages).toHaveLength(3);
    expect(pages.at(-1)!.body).toBe(last.body);
    mkdirSync('test-results/diff-pages', { recursive: true });
    for (const [i, page] of pages.entries())
      writeFileSync(
        `test-results/diff-pages/e2e-review-${i + 1}.png`,
        Buffer.from(await (await fetch(page.mediaUrls[0]!)).arrayBuffer()),
      );

    await phone.send('diff d.txt');
    await phone.next(/^d\.txt \(2\/2\)/, 60_000);
    const asked = phone.received().filter((m) => /^d\.txt \(\d\/2\)/.test(m.body));
    expect(asked.map((m) => m.mediaUrls.length)).toEqual([1, 1]);
    await phone.send('diff nope.txt');
    expect((await phone.next(/No changed file matches "nope\.txt"/)).body).toContain('• d.txt');
    await phone.send('reject');
    await phone.next(/undone/i);
    for (const message of phone.received()) expect(message.body.length).toBeLessThanOrEqual(1600);
    console.log(
      `phone transcript (long diff):\n${phone
        .received()
        .map((m) => `bot > ${m.body}${m.mediaUrls.length ? ' [picture]' : ''}`)
        .join('\n')}`,
    );
  }, 300_000);
});
