// Forged media refs on the real API server: a runner (here the test, patching status) names
// another Session's images, `..` and malformed refs; the relay signs and sends only the Session's
// own, and logs each forged one once.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { workspaceName } from '../../common/session/names.ts';
import type { Media } from '../../common/session/schema.ts';
import { startFakeTwilio, type FakeTwilio } from '../fakes/twilio.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { PUBLIC_URL, startTestRelay, type TestRelay } from '../support/relay.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550231';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64, 7)]);
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 3)]);
let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let fake: FakeTwilio;
let relay: TestRelay;
const warnings: { msg: string; ref?: string }[] = [];

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-refs'));
  fake = await startFakeTwilio();
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
  relay = await startTestRelay({ kubeConfig: kc, namespace: ns, twilio: fake, allowed: [phone], logger });
});
afterAll(async () => {
  await relay?.close();
  await fake?.close();
  await deleteNamespace(kc, ns);
});

const keep = (session: string, file: string, bytes: Buffer) => {
  mkdirSync(join(relay.config.media.dir, ns, session), { recursive: true });
  writeFileSync(join(relay.config.media.dir, ns, session, file), bytes);
};
const create = (name: string) =>
  sessions.create(ns, name, {
    phone,
    prompt: 'p',
    repo: { url: 'https://github.com/acme/web.git' },
    workspace: workspaceName(testPhoneHash(phone)),
  });

describe("media refs in a Session's status", () => {
  it(`sends only the Session's own images; another Session's, \
\`..\` and malformed refs are left out and logged`, async () => {
    const [own, other] = ['refs-own', 'refs-other'];
    await create(own);
    await create(other);
    keep(other, 'diff.png', PNG);
    keep(other, 'screenshot-1.jpg', JPEG);
    keep(own, 'screenshot-1.jpg', JPEG);
    const shot = (ref: string): Media => ({ kind: 'screenshot', ref, contentType: 'image/jpeg' });
    const forged = [
      `${ns}/${other}/screenshot-1.jpg`,
      `${ns}/${own}/../${other}/screenshot-1.jpg`,
      `${ns}/${own}/%2e%2e/x.jpg`,
      `${ns}-x/${own}/screenshot-1.jpg`,
    ];
    await sessions.patchStatus(ns, own, { phase: 'Starting' });
    await sessions.patchStatus(ns, own, { phase: 'Working' });
    await sessions.patchStatus(ns, own, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', summary: '1 file changed', createdAt: new Date().toISOString() },
      result: {
        diffStat: ' a.txt | 1 +',
        media: [{ kind: 'diff', ref: `${ns}/${other}/diff.png`, contentType: 'image/png' }],
      },
    });
    const review = await fake.waitFor(phone, 2);
    // the caption alone, no picture of the other Session
    expect(review.every((m) => m.mediaUrls.length === 0)).toBe(true);

    await sessions.patchStatus(ns, own, { phase: 'Publishing', pending: null as never });
    await sessions.patchStatus(ns, own, {
      phase: 'Succeeded',
      result: {
        prUrl: 'https://github.com/acme/web/pull/3',
        media: [shot(`${ns}/${own}/screenshot-1.jpg`), ...forged.map(shot)],
      },
    });
    await eventually(() => expect(fake.to(phone).some((m) => /Pull request opened/.test(m.body))).toBe(true), 15_000);
    const links = fake.to(phone).flatMap((m) => m.mediaUrls);
    expect(links).toHaveLength(1);
    expect(links[0]).toMatch(new RegExp(`^${PUBLIC_URL}/media/${ns}/${own}/screenshot-1\\.jpg\\?`));
    expect((await fetch(links[0]!.replace(PUBLIC_URL, relay.url))).status).toBe(200);

    const refused = warnings.filter((w) => /refused to sign/.test(w.msg)).map((w) => w.ref);
    expect(refused.sort()).toEqual([`${ns}/${other}/diff.png`, ...forged].sort());
  });
});
