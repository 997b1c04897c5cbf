// The relay fault suite's settings and parts: relay replicas as real OS processes (relay/main.ts,
// configured by environment as in production) that can be SIGKILLed and restarted on the same
// port and journal folder, and a phone that posts signed webhooks the way Twilio retries them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { hostEnv } from '../../local/config.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startManaged, untilHttpOk, type Managed } from '../../local/control-plane/processes.ts';
import type { FakeTwilio } from '../fakes/twilio.ts';
import { FAULT_LOG_LEVEL } from './config.ts';
import { messageSid, postWebhook, signedWebhook } from './twilio-webhook.ts';
import { TEST_PHONE_HASH_KEY } from './phone-hash.ts';

const FAULT_PUBLIC_URL = 'https://tether.faults';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One relay replica: a process that keeps its port, journal folder and log across restarts. */
export class RelayProcess {
  readonly url: string;
  readonly journalDir = mkdtempSync(join(tmpdir(), 'relay-journal-'));
  readonly log: string;
  kills = 0;
  private proc: Managed | undefined;
  private readonly env: Record<string, string>;

  private constructor(port: number, env: Record<string, string>) {
    this.url = `http://127.0.0.1:${port}`;
    this.log = join(this.journalDir, '..', `${this.journalDir.split('/').pop()}.log`);
    this.env = { ...env, RELAY_PORT: String(port), RELAY_JOURNAL_DIR: this.journalDir };
  }

  static async start(options: { namespace: string; twilio: FakeTwilio; phones: string[] }): Promise<RelayProcess> {
    const relay = new RelayProcess(await freePort(), {
      ...hostEnv(),
      KUBECONFIG: inject('kubeconfig'),
      TETHER_LOG_LEVEL: FAULT_LOG_LEVEL,
      PUBLIC_URL: FAULT_PUBLIC_URL,
      TETHER_NAMESPACE: options.namespace,
      TETHER_REPO_URL: 'https://github.com/acme/web.git',
      RELAY_MEDIA_SIGNING_KEY: randomBytes(32).toString('hex'),
      TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
      RELAY_MEDIA_DIR: mkdtempSync(join(tmpdir(), 'relay-media-')),
      ALLOWED_NUMBERS: options.phones.join(','),
      RELAY_SEND_RATE: '200',
      RELAY_PROGRESS_BATCH: '200ms',
      TWILIO_ACCOUNT_SID: options.twilio.accountSid,
      TWILIO_AUTH_TOKEN: options.twilio.authToken,
      TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
      TWILIO_API_URL: options.twilio.url,
    });
    await relay.launch();
    return relay;
  }

  /** Starts the process and resolves when it answers /readyz (its journal replayed). */
  async launch(): Promise<void> {
    this.proc = startManaged('relay', process.execPath, ['relay/main.ts'], this.log, { env: this.env });
    // a loaded 2-core machine starts Node slowly
    await untilHttpOk(`${this.url}/readyz`, this.proc, 120_000, 50).catch((error: Error) => {
      throw new Error(`${error.message}; see ${this.log}`);
    });
  }

  /** SIGKILL: no shutdown code runs. */
  async kill(): Promise<void> {
    this.proc!.signal('SIGKILL');
    await this.proc!.exited;
    this.kills++;
  }

  /** SIGTERM: the relay drains and exits. */
  async stop(): Promise<void> {
    await this.proc?.stop(10_000);
  }
}

/**
 * Posts one message the way Twilio delivers it: the same MessageSid again (to another replica)
 * until a replica acknowledges it with 200. Resolves with the number of attempts.
 */
export async function deliverWebhook(
  relays: RelayProcess[],
  authToken: string,
  from: string,
  body: string,
  sid = messageSid(),
  pick = Math.random,
): Promise<{ sid: string; attempts: number }> {
  const hook = signedWebhook(authToken, `${FAULT_PUBLIC_URL}/webhook`, { from, body, sid });
  for (let attempts = 1; ; attempts++) {
    const relay = relays[Math.floor(pick() * relays.length)]!;
    // A 200 carrying a <Message> is the busy reply: not recorded, so sent again like a failure.
    const status = await postWebhook(`${relay.url}/webhook`, hook).then(
      async (r) => ((await r.text()).includes('<Message>') ? 503 : r.status),
      () => 0,
    );
    if (status === 200) return { sid, attempts };
    if (attempts > 400) throw new Error(`webhook ${sid} never acknowledged (last status ${status})`);
    await sleep(50);
  }
}
