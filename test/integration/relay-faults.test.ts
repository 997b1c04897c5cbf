// Relay fault suite: two relay replicas as real OS processes on the real API server, five phones
// sending a steady stream of signed commands and approvals, and one replica at a time SIGKILLed
// at a random moment and restarted on the same journal folder. The test plays the runner: each
// Session works, every other one asks for a tool approval, then succeeds. Afterwards every
// acknowledged message has been acted on exactly once (one Session per command, one decision per
// approval), no Session is duplicated, and every prompt reached the phone.
// Kills: 10 by default (CI), 100 with TETHER_FAULTS_FULL=1; TETHER_FAULT_SEED replays a run.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeConfig } from '@kubernetes/client-node';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { sessionsPath, type SessionClient } from '../../common/kube/sessions.ts';
import { commandSessionName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { faultCount, faultSeed } from '../support/config.ts';
import { random } from '../support/random.ts';
import { RelayProcess, deliverWebhook } from '../support/relay-faults.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phones = ['+14155557001', '+14155557002', '+14155557003', '+14155557004', '+14155557005'];
const settings = { kills: faultCount(10, 100), seed: faultSeed() };
let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let fake: FakeTwilio;
let relays: RelayProcess[] = [];
let watcher: Informer<Session>;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-faults'));
  fake = await startFakeTwilio();
  relays = await Promise.all([0, 1].map(() => RelayProcess.start({ namespace: ns, twilio: fake, phones })));
  watcher = createInformer<Session>({
    kube: connectionFromKubeConfig(kc),
    path: sessionsPath(ns),
    logger: pino({ level: 'silent' }),
  });
  await watcher.start();
}, 120_000);
afterAll(async () => {
  watcher?.stop();
  await Promise.all(relays.map((r) => r.stop()));
  await fake?.close();
  await deleteNamespace(kc, ns);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(look: () => T | undefined, timeoutMs: number): Promise<T | undefined> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(25)) {
    const found = look();
    if (found !== undefined && found !== false) return found;
  }
  return undefined;
}

interface Sent {
  phone: string;
  sid: string;
  body: string;
  attempts: number;
}
interface Prompt {
  phone: string;
  session: string;
  requestId: string;
  delivered: boolean;
  answer?: string;
}

/**
 * A person answers *allow*. A replica whose cache does not hold the request yet says nothing is waiting: the
 * person answers again (each answer a new message), until the decision is recorded.
 */
async function answer(number: string, name: string, rand: () => number, answered: (sid: string) => void) {
  await sleep(100); // a person reads before answering
  for (let tries = 0; tries < 20; tries++) {
    const before = fake.to(number).length;
    answered((await deliverWebhook(relays, fake.authToken, number, 'allow', undefined, rand)).sid);
    const outcome = await until(() => {
      if (watcher.get(`${ns}/${name}`)?.spec.decisions?.length) return 'recorded';
      return fake
        .to(number)
        .slice(before)
        .some((m) => /^Nothing is waiting/.test(m.body))
        ? 'unseen'
        : undefined;
    }, 60_000);
    if (outcome !== 'unseen') return;
  }
}

/** One phone: a command, the runner's answer to it (with a tool prompt every other time), the next. */
async function phone(
  number: string,
  rand: () => number,
  stopped: () => boolean,
  sent: Sent[],
  prompts: Prompt[],
): Promise<void> {
  const key = (name: string) => `${ns}/${name}`;
  for (let i = 0; !stopped(); i++) {
    const body = `task ${number.slice(-4)}-${i}`;
    const command = await deliverWebhook(relays, fake.authToken, number, body, undefined, rand);
    sent.push({ phone: number, body, ...command });
    const name = commandSessionName(testPhoneHash(number), command.sid);
    // A message acknowledged by a replica killed before it acted waits for that replica's restart.
    if (!(await until(() => watcher.get(key(name)), 60_000))) continue; // reported as missing below
    await sessions.patchStatus(ns, name, {
      phase: 'Working',
      progress: [{ seq: 1, at: new Date().toISOString(), text: `working on ${body}` }],
    });
    if (i % 2 === 0) {
      const requestId = `req-${i}`;
      const marker = `echo ${number.slice(-4)}-${i}`;
      await sessions.patchStatus(ns, name, {
        phase: 'AwaitingApproval',
        pending: {
          id: requestId,
          kind: 'tool',
          tool: 'Bash',
          input: JSON.stringify({ command: marker }),
          createdAt: new Date().toISOString(),
        },
      });
      const prompt: Prompt = { phone: number, session: name, requestId, delivered: false };
      prompts.push(prompt);
      prompt.delivered = (await until(() => fake.to(number).some((m) => m.body.includes(marker)), 45_000)) === true;
      if (prompt.delivered) await answer(number, name, rand, (sid) => (prompt.answer = sid));
    }
    await sessions.patchStatus(ns, name, {
      phase: 'Succeeded',
      pending: null as never,
      result: { summary: `finished ${body}` },
    });
    await until(() => fake.to(number).some((m) => m.body.includes(`finished ${body}`)), 20_000);
    await sleep(50);
  }
}

describe('relay under SIGKILL', () => {
  it(
    `acts on every acknowledged message exactly once and delivers every prompt across ${settings.kills} kills`,
    async () => {
      const rand = random(settings.seed);
      const sent: Sent[] = [];
      const prompts: Prompt[] = [];
      let stopped = false;
      const started = Date.now();
      const load = Promise.all(
        phones.map((p) => phone(p, random(Math.floor(rand() * 1e9)), () => stopped, sent, prompts)),
      );
      const downtimes: number[] = [];
      for (let k = 0; k < settings.kills; k++) {
        await sleep(300 + rand() * 1500);
        // Each kill lands in a stream of commands, however slowly the machine acknowledges them.
        await until(() => sent.length > k + 1, 60_000);
        const victim = relays[Math.floor(rand() * relays.length)]!;
        const down = Date.now();
        await victim.kill();
        await sleep(rand() * 200);
        await victim.launch();
        downtimes.push(Date.now() - down);
      }
      stopped = true;
      await load;
      const loadMs = Date.now() - started;

      const byName = new Map(watcher.list().map((s) => [s.metadata.name!, s]));
      const missing = sent.filter((m) => !byName.has(commandSessionName(testPhoneHash(m.phone), m.sid)));
      const prompted = new Map<string, number>();
      for (const s of byName.values()) prompted.set(s.spec.prompt, (prompted.get(s.spec.prompt) ?? 0) + 1);
      const duplicated = [...prompted].filter(([, n]) => n > 1);
      const unsent = [...byName.values()].filter((s) => !sent.some((m) => m.body === s.spec.prompt));
      const undelivered = prompts.filter((p) => !p.delivered);
      const decisions = prompts
        .filter((p) => p.answer)
        .map((p) => (byName.get(p.session)?.spec.decisions ?? []).filter((d) => d.requestId === p.requestId).length);
      const retried = sent.filter((m) => m.attempts > 1).length;
      console.log(
        `[relay-faults] seed ${settings.seed}: ${relays.map((r) => r.kills).reduce((a, b) => a + b)} kills in ` +
          `${(loadMs / 1000).toFixed(1)} s ` +
          `(restart to ready p50 ${downtimes.sort((a, b) => a - b)[Math.floor(downtimes.length / 2)]} ms); ` +
          `${sent.length} commands (${retried} resent by the phone), ` +
          `${prompts.length} prompts, ${decisions.length} approvals; missing ${missing.length}, duplicated ` +
          `${duplicated.length}, undelivered prompts ${undelivered.length}`,
      );

      expect(sent.length).toBeGreaterThan(settings.kills);
      expect(missing, `seed ${settings.seed}: acknowledged commands without a Session`).toEqual([]);
      expect(duplicated, `seed ${settings.seed}: duplicate Sessions`).toEqual([]);
      expect(unsent).toEqual([]);
      expect(undelivered, `seed ${settings.seed}: prompts that never reached the phone`).toEqual([]);
      expect(
        decisions.every((n) => n === 1),
        `seed ${settings.seed}: decisions per approval ${decisions.join(',')}`,
      ).toBe(true);
    },
    (settings.kills * 15 + 120) * 1000,
  );
});
