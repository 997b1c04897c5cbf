// Starts a real relay (real informer, real API server, Twilio SDK against the fake) for tests.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { pino, type Logger } from 'pino';
import { expect } from 'vitest';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { sessionsPath, type SessionClient } from '../../common/kube/sessions.ts';
import type { Session } from '../../common/session/schema.ts';
import { loadConfig, type RelayConfig } from '../../relay/config.ts';
import { createMetrics, type RelayMetrics } from '../../relay/metrics.ts';
import { startRelay, type RunningRelay } from '../../relay/server.ts';
import type { FakeTwilio } from '../fakes/twilio.ts';
import { eventually } from './eventually.ts';
import { TEST_PHONE_HASH_KEY } from './phone-hash.ts';

export const PUBLIC_URL = 'https://tether.test';
export const CHAT_TOKEN = 'chat-token-0123456789';

export interface TestRelay extends RunningRelay {
  config: RelayConfig;
  metrics: RelayMetrics;
  /** The relay's Session cache. */
  store: Informer<Session>;
}

export async function startTestRelay(options: {
  kubeConfig: KubeConfig;
  namespace: string;
  twilio?: FakeTwilio;
  allowed?: string[];
  env?: Record<string, string>;
  mediaDir?: string;
  /** default: silent, or the level in RELAY_TEST_LOG */
  logger?: Logger;
  /** the inbound journal's folder; give the same one to a restarted relay */
  journalDir?: string;
}): Promise<TestRelay> {
  const env: Record<string, string> = {
    PUBLIC_URL,
    TETHER_NAMESPACE: options.namespace,
    TETHER_REPO_URL: 'https://github.com/acme/web.git',
    RELAY_MEDIA_SIGNING_KEY: 'test-signing-key-0123456789abcdef',
    TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
    RELAY_MEDIA_DIR: options.mediaDir ?? mkdtempSync(join(tmpdir(), 'relay-media-')),
    RELAY_JOURNAL_DIR: options.journalDir ?? mkdtempSync(join(tmpdir(), 'relay-journal-')),
    RELAY_WEB_CHAT_TOKEN: CHAT_TOKEN,
    ALLOWED_NUMBERS: (options.allowed ?? []).join(','),
    RELAY_PROGRESS_BATCH: '300ms',
    RELAY_SEND_RATE: '200',
    TETHER_LOG_LEVEL: 'silent',
    ...(options.twilio
      ? {
          TWILIO_ACCOUNT_SID: options.twilio.accountSid,
          TWILIO_AUTH_TOKEN: options.twilio.authToken,
          TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
          TWILIO_API_URL: options.twilio.url,
        }
      : {}),
    ...options.env,
  };
  const config = { ...loadConfig(env), port: 0 };
  const logger = options.logger ?? pino({ level: process.env.RELAY_TEST_LOG ?? 'silent' });
  const metrics = createMetrics();
  const kubeConfig = ownConnection(options.kubeConfig);
  const store = createInformer<Session>({
    kube: kubeConfig,
    logger,
    path: sessionsPath(options.namespace),
  });
  const relay = await startRelay({ config, kubeConfig, store, logger, metrics }, '127.0.0.1');
  return Object.assign(relay, { config, metrics, store });
}

/**
 * Waits until the relay has acted on everything written to the Session so far: its cache holds the version
 * the API server has, its lanes (where a Session's delivery check runs) are idle, and the Session has not
 * changed meanwhile (a write of the relay's own starts the wait again).
 */
export async function relaySettled(
  relay: TestRelay,
  sessions: SessionClient,
  namespace: string,
  name: string,
): Promise<void> {
  const version = async () => (await sessions.get(namespace, name))?.metadata.resourceVersion;
  await eventually(async () => {
    const current = await version();
    expect(relay.store.get(`${namespace}/${name}`)?.metadata.resourceVersion).toBe(current);
    await relay.lanes.idle();
    // A check that was running when the version arrived runs again once it ends (a chain of promises).
    await new Promise((r) => setImmediate(r));
    await relay.lanes.idle();
    expect(await version()).toBe(current);
  }, 30_000);
}

/** A connection of the relay's own (its own keep-alive pool), as a relay process has, to the same cluster. */
function ownConnection(source: KubeConfig) {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: source.getClusters(),
    users: source.getUsers(),
    contexts: source.getContexts(),
    currentContext: source.getCurrentContext(),
  });
  return connectionFromKubeConfig(kc);
}
