// The relay benchmark's webhook sender, in its own process so that the fake Twilio API and the
// watcher (the benchmark's process) do not delay the requests it times: one signed webhook per
// phone at a fixed rate, signed before the burst, over kept-alive node:http connections. Reads
// {relayUrl, webhookUrl, authToken, phones, rate} as JSON on stdin; writes one JSON line on stdout:
// each webhook's acknowledgement time (ms), how many were shed and recorded, and when each phone's
// webhook was sent (ms since the epoch, performance.timeOrigin based).
// Run by bench/relay-load.ts.
import { Agent, request } from 'node:http';
import { text } from 'node:stream/consumers';
import { messageSid, signedWebhook } from '../test/support/twilio-webhook.ts';

const { relayUrl, webhookUrl, authToken, phones, rate } = JSON.parse(await text(process.stdin)) as {
  relayUrl: string;
  webhookUrl: string;
  authToken: string;
  phones: string[];
  rate: number;
};
const agent = new Agent({ keepAlive: true });
const target = new URL('/webhook', relayUrl);
const hooks = phones.map((phone, i) => ({
  phone,
  ...signedWebhook(authToken, webhookUrl, { from: phone, body: `bench command ${i}`, sid: messageSid() }),
}));
const sleep = (n: number) => new Promise((r) => setTimeout(r, n));
// Signing left garbage: collected now (the process runs with --expose-gc), not as a pause of this process in the
// first timed requests.
(globalThis as { gc?: () => void }).gc?.();

/** One POST; resolves with the status and body once the whole answer is in. */
function post(hook: (typeof hooks)[number]): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      { method: 'POST', agent, headers: { ...hook.headers, 'content-length': Buffer.byteLength(hook.body) } },
      (res) => {
        let body = '';
        res
          .setEncoding('utf8')
          .on('data', (chunk: string) => (body += chunk))
          .on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.once('error', reject).end(hook.body);
  });
}

const acks: number[] = [];
const sentAt: Array<[string, number]> = [];
let shed = 0;
let recorded = 0;
const requests: Promise<void>[] = [];
const start = performance.now();
for (const [i, hook] of hooks.entries()) {
  const wait = start + (i * 1000) / rate - performance.now();
  if (wait > 1) await sleep(wait);
  const t0 = performance.now();
  sentAt.push([hook.phone, performance.timeOrigin + t0]);
  // A kept-alive connection the server closed as it was reused: sent again, as Twilio would (same MessageSid).
  requests.push(
    post(hook)
      .catch(() => post(hook))
      .then(({ status, body }) => {
        if (status !== 200) throw new Error(`webhook answered ${status}`);
        acks.push(performance.now() - t0);
        if (body.includes('<Message>')) shed++;
        else recorded++;
      }),
  );
}
await Promise.all(requests);
agent.destroy();
process.stdout.write(`${JSON.stringify({ acks, shed, recorded, sentAt })}\n`);
