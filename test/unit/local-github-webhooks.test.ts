// The GitHub stand-in's webhook deliveries: signed, with GitHub's headers, retried with back-off
// on a non-2xx answer or a dropped connection, given up after the retries, redelivered with the
// same GUID (by the test or over REST), and logged with every attempt.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../../local/github/receiver.ts';
import { startGitHubStandIn, type GitHubStandIn } from '../../local/github/stand-in.ts';
import { signature } from '../../local/github/webhooks.ts';

let github: GitHubStandIn;
let receiver: WebhookReceiver;
beforeEach(async () => {
  receiver = await startWebhookReceiver('s3cret');
  github = await startGitHubStandIn({
    token: 'pat',
    hooks: [{ url: receiver.url, secret: receiver.secret }],
    webhooks: { retries: 2, backoffMs: 20 },
  });
});
afterEach(async () => {
  await github.close();
  await receiver.close();
});

const open = () => github.createPull('acme', 'sample', { title: 'T', head: 'tether/x', base: 'main' });

describe('the GitHub stand-in: webhook deliveries', () => {
  it("signs each delivery with the hook's secret and sends GitHub's headers", async () => {
    await open();
    await github.deliveriesSettled();
    const [got] = receiver.received;
    expect(got).toMatchObject({ event: 'pull_request', action: 'opened', signed: true });
    expect(got!.guid).toMatch(/^[0-9a-f-]{36}$/);
    expect(got!.headers['x-hub-signature-256']).toBe(signature('s3cret', JSON.stringify(got!.payload)));
    expect(got!.headers['content-type']).toBe('application/json');
    expect(github.deliveries[0]).toMatchObject({ guid: got!.guid, state: 'delivered', statusCode: 202 });
  });

  it('retries a non-2xx answer and a dropped connection with the same GUID until it is taken', async () => {
    receiver.failNext(500);
    await open();
    await github.deliveriesSettled();
    receiver.failNext(0);
    await github.closePull('acme', 'sample', 1);
    await github.deliveriesSettled();
    expect(github.deliveries.map((d) => [d.action, d.state, d.attempts.map((a) => a.status)])).toEqual([
      ['opened', 'delivered', [500, 202]],
      ['closed', 'delivered', [0, 202]],
    ]);
    expect(receiver.received.map((r) => r.guid)).toEqual(github.deliveries.map((d) => d.guid));
  });

  it('gives up after the retries and logs it failed; a redelivery sends it again with the same GUID', async () => {
    receiver.failNext(503, 3);
    await open();
    await github.deliveriesSettled();
    const [failed] = github.deliveries;
    expect(failed).toMatchObject({ state: 'failed', statusCode: 503 });
    expect(failed!.attempts).toHaveLength(3);
    expect(receiver.received).toEqual([]);
    const again = github.redeliver(failed!.id);
    await github.deliveriesSettled();
    expect(again).toMatchObject({ guid: failed!.guid, redelivery: true, state: 'delivered' });
    github.redeliver(failed!.guid);
    await github.deliveriesSettled();
    expect(receiver.received.map((r) => r.guid)).toEqual([failed!.guid, failed!.guid]);
  });

  it("lists a hook's deliveries over REST and redelivers one there", async () => {
    await open();
    await github.deliveriesSettled();
    const auth = { authorization: 'Bearer pat' };
    const listed = await fetch(`${github.url}/repos/acme/sample/hooks/1/deliveries`, { headers: auth });
    const [delivery] = (await listed.json()) as Array<{ id: number; guid: string; status_code: number; event: string }>;
    expect(delivery).toMatchObject({ guid: receiver.received[0]!.guid, status_code: 202, event: 'pull_request' });
    const redelivered = await fetch(`${github.url}/repos/acme/sample/hooks/1/deliveries/${delivery!.id}/attempts`, {
      method: 'POST',
      headers: auth,
    });
    expect(redelivered.status).toBe(202);
    await github.deliveriesSettled();
    expect(receiver.received.map((r) => r.guid)).toEqual([delivery!.guid, delivery!.guid]);
  });

  it('sends a hook only the events it asked for, in the order they happened', async () => {
    const second = await startWebhookReceiver('other');
    github.addWebhook({ url: second.url, secret: second.secret, events: ['check_run'] });
    await github.createPull('acme', 'sample', { title: 'T', head: 'tether/x', base: 'main', headSha: 'a'.repeat(40) });
    await github.createCheckRun('acme', 'sample', { headSha: 'a'.repeat(40), name: 'ci', conclusion: 'failure' });
    await github.deliveriesSettled();
    expect(second.received[1]!.payload.check_run).toMatchObject({ pull_requests: [{ number: 1 }] });
    expect(second.received.map((r) => `${r.event}:${r.action}`)).toEqual(['check_run:created', 'check_run:completed']);
    expect(receiver.received.map((r) => r.event)).toEqual(['pull_request', 'check_run', 'check_run', 'check_suite']);
    await second.close();
  });
});
