// The Twilio transport is ready when made: the SDK loads its Messages API lazily (dozens of
// modules, tens of ms on the event loop), which must not happen in the first send, beside the
// webhooks being acknowledged.
import { createRequire } from 'node:module';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTwilioTransport } from '../../relay/transports/twilio.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';

let fake: FakeTwilio;
beforeAll(async () => {
  fake = await startFakeTwilio();
});
afterAll(async () => fake?.close());

const loadedModules = () => new Set(Object.keys(createRequire(import.meta.url).cache));

it('loads no module in its first send', async () => {
  const transport = createTwilioTransport({
    accountSid: fake.accountSid,
    authToken: fake.authToken,
    from: 'whatsapp:+14155238886',
    apiUrl: fake.url,
    buttons: false,
    logger: pino({ level: 'silent' }),
  });
  const before = loadedModules();
  const sent = await transport.send({ to: '+15555550100', body: 'On it' });
  expect(sent.id).toMatch(/^SM/);
  expect([...loadedModules()].filter((m) => !before.has(m))).toEqual([]);
  expect(fake.to('+15555550100').map((m) => m.body)).toEqual(['On it']);
});
