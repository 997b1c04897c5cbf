// The phone hash: keyed by the install's secret, refused at start without one, and the way a phone's
// objects made by an earlier version (named by the unkeyed hash) are found again.
import { createHmac } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LABEL_PHONE_HASH, workspaceName } from '../../common/session/names.ts';
import { PHONE_HASH_LENGTH, legacyPhoneHash, phoneHasher } from '../../common/session/phone-hash.ts';
import { loadConfig as loadControllerConfig } from '../../controller/config.ts';
import { specProblem, workspaceProblem } from '../../controller/decide.ts';
import { workspaceClaim } from '../../controller/workspace-claim.ts';
import { loadConfig as loadRelayConfig } from '../../relay/config.ts';
import { createMetrics } from '../../relay/metrics.ts';
import { WebChat } from '../../relay/transports/web.ts';
import { chatHandler } from '../support/chat-handler.ts';
import { MemorySessions } from '../support/memory-sessions.ts';
import { TEST_PHONE_HASH_KEY, testPhoneHash } from '../support/phone-hash.ts';
import { testSession } from './controller-fixtures.ts';

const PHONE = '+14155550123';
const OTHER = '+14155550124';

describe('phoneHasher', () => {
  it('is HMAC-SHA-256 of the number under the key, cut to 16 hex characters, the same every time', () => {
    const hash = phoneHasher('k'.repeat(32));
    const expected = createHmac('sha256', 'k'.repeat(32)).update(PHONE).digest('hex').slice(0, 16);
    expect(hash(PHONE)).toBe(expected);
    expect(hash(PHONE)).toMatch(new RegExp(`^[0-9a-f]{${PHONE_HASH_LENGTH}}$`));
    expect(phoneHasher('k'.repeat(32))(PHONE)).toBe(hash(PHONE));
    expect(hash(OTHER)).not.toBe(hash(PHONE));
  });

  it('differs by key, and from the unkeyed hash earlier versions used', () => {
    const one = phoneHasher('a'.repeat(32))(PHONE);
    const two = phoneHasher('b'.repeat(32))(PHONE);
    expect(one).not.toBe(two);
    // The unkeyed SHA-256 form: what earlier versions named this number's objects by.
    expect(legacyPhoneHash(PHONE)).toBe('36a2cef4ff9bf7a1');
    expect([one, two]).not.toContain(legacyPhoneHash(PHONE));
  });

  it('refuses a key shorter than 32 characters', () => {
    expect(() => phoneHasher('k'.repeat(31))).toThrow(/at least 32 characters/);
  });
});

describe('TETHER_PHONE_HASH_KEY', () => {
  const relayEnv = {
    PUBLIC_URL: 'https://tether.example.com',
    TETHER_REPO_URL: 'https://github.com/acme/web.git',
    RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(32),
    RELAY_WEB_CHAT_TOKEN: 't'.repeat(20),
  };
  const short = 'hunter2-hunter2-hunter2';

  it.each([
    ['the relay', (key?: string) => loadRelayConfig({ ...relayEnv, ...(key ? { TETHER_PHONE_HASH_KEY: key } : {}) })],
    ['the controller', (key?: string) => loadControllerConfig(key ? { TETHER_PHONE_HASH_KEY: key } : {})],
  ])('%s refuses to start without it, or with one too short, naming it and never echoing it', (_who, load) => {
    expect(() => load()).toThrow(/^TETHER_PHONE_HASH_KEY: .*at least 32 characters/);
    expect(() => load(short)).toThrow(/^TETHER_PHONE_HASH_KEY: \(hidden\) is invalid/);
    expect(() => load(short)).toThrow(/^(?!.*hunter2)/s);
    expect(load(TEST_PHONE_HASH_KEY).phoneHash(PHONE)).toBe(testPhoneHash(PHONE));
  });

  it('stops the controller process with the message', () => {
    const out = spawnSync(process.execPath, ['controller/main.ts'], {
      env: { PATH: process.env.PATH, KUBECONFIG: '/nonexistent' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(out.status).toBe(2);
    expect(out.stderr).toMatch(/TETHER_PHONE_HASH_KEY: .*at least 32 characters/);
  }, 30_000);
});

describe("a phone's workspace made by an earlier version", () => {
  const keyed = workspaceName(testPhoneHash(PHONE));
  const legacy = workspaceName(legacyPhoneHash(PHONE));
  const pvcs =
    (...names: string[]) =>
    (name: string) =>
      names.includes(name) ? { metadata: { name } } : undefined;
  const session = (workspace: string, label = testPhoneHash(PHONE)) => {
    const s = testSession({ phone: PHONE });
    return { ...s, metadata: { ...s.metadata, labels: { [LABEL_PHONE_HASH]: label } }, spec: { ...s.spec, workspace } };
  };

  it('is mounted while it is the only one; a new one is made and kept under the keyed name only', () => {
    expect(workspaceClaim(session(keyed), testPhoneHash, pvcs(legacy))).toBe(legacy);
    expect(workspaceClaim(session(keyed), testPhoneHash, pvcs())).toBe(keyed);
    expect(workspaceClaim(session(keyed), testPhoneHash, pvcs(keyed))).toBe(keyed);
    expect(workspaceClaim(session(keyed), testPhoneHash, pvcs(keyed, legacy))).toBe(keyed);
    // A Session the earlier version made, still waiting at the upgrade, names the legacy one.
    expect(workspaceClaim(session(legacy), testPhoneHash, pvcs(legacy))).toBe(legacy);
    expect(workspaceClaim(session(legacy), testPhoneHash, pvcs())).toBe(keyed);
  });

  it("keeps each repository's workspace apart", () => {
    const web = workspaceName(testPhoneHash(PHONE), 'web');
    const legacyWeb = workspaceName(legacyPhoneHash(PHONE), 'web');
    expect(workspaceClaim(session(web), testPhoneHash, pvcs(legacy, legacyWeb))).toBe(legacyWeb);
    expect(workspaceClaim(session(web), testPhoneHash, pvcs(legacy))).toBe(web);
  });

  it("never makes another phone's workspace this phone's", () => {
    const theirs = workspaceName(legacyPhoneHash(OTHER));
    expect(workspaceClaim(session(theirs), testPhoneHash, pvcs(theirs))).toBe(theirs);
    expect(specProblem(session(theirs), ['github.com'], testPhoneHash)).toMatch(/is not this phone's workspace/);
    expect(specProblem(session(legacy, legacyPhoneHash(PHONE)), ['github.com'], testPhoneHash)).toBeUndefined();
    expect(specProblem(session(keyed, legacyPhoneHash(OTHER)), ['github.com'], testPhoneHash)).toMatch(
      /does not match spec.phone/,
    );
    const labelled = (hash: string) => ({ metadata: { name: legacy, labels: { [LABEL_PHONE_HASH]: hash } } });
    expect(workspaceProblem(session(keyed), labelled(legacyPhoneHash(PHONE)), testPhoneHash)).toBeUndefined();
    expect(workspaceProblem(session(keyed), labelled(legacyPhoneHash(OTHER)), testPhoneHash)).toMatch(
      /belongs to another phone/,
    );
  });
});

describe("the relay's log lines", () => {
  it('carry the keyed hash of the phone: never its number, never the unkeyed hash', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const store = new MemorySessions('ns');
    const chat = new WebChat({ phone: PHONE, token: 't'.repeat(20) });
    const metrics = createMetrics();
    const handler = chatHandler({ store, chat, metrics, logger });
    await handler.accept({ id: 'web-1', from: PHONE, body: 'make the navbar sticky', transport: 'web' });
    await handler.accept({ id: 'web-2', from: PHONE, body: 'status', transport: 'web' });
    const [made] = store.list();
    expect(made!.metadata.name!.startsWith(`${testPhoneHash(PHONE)}-`)).toBe(true);
    expect(made!.metadata.labels?.[LABEL_PHONE_HASH]).toBe(testPhoneHash(PHONE));
    expect(made!.spec.workspace).toBe(workspaceName(testPhoneHash(PHONE)));
    const text = lines.join('');
    expect(text).toContain(`"phoneHash":"${testPhoneHash(PHONE)}"`);
    expect(text).not.toContain(legacyPhoneHash(PHONE));
    expect(text).not.toContain(PHONE.slice(1));
  });
});
