// Assembles one relay from its configuration and the process-wide parts main.ts owns
// (logger, metrics, kube client, Session informer). Integration tests start several.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import { createApp } from './app.ts';
import type { RelayConfig } from './config.ts';
import { parseDuration } from '../common/session/display.ts';
import { ConfigMapClaims } from './inbound/claims.ts';
import { ConfigMapRepoChoices, MemoryRepoChoices } from './inbound/repo-choices.ts';
import { PhoneRepos } from './inbound/repos.ts';
import { InboundHandler } from './inbound/handler.ts';
import { Intake } from './inbound/intake.ts';
import { Journal } from './inbound/journal.ts';
import { TWILIO_API_ORIGIN } from './inbound/media-fields.ts';
import { InboundImages } from './inbound/media-in.ts';
import { PhoneView } from './inbound/phone-view.ts';
import { CachedTokenAuthorizer, tokenReviewer, type UploadAuthorizer } from './media/auth.ts';
import { foreignRefAuditor } from './media/refs.ts';
import { signMediaUrl } from './media/signing.ts';
import { MediaStore } from './media/store.ts';
import { fetchTwilioImage } from './media/twilio-media.ts';
import type { RelayMetrics } from './metrics.ts';
import { Delivery } from './outbound/delivery.ts';
import { Outbox } from './outbound/outbox.ts';
import { PhoneLanes } from './phone-lane.ts';
import type { SessionStore } from './session-store.ts';
import { createTwilioTransport } from './transports/twilio.ts';
import type { Transport } from './transports/transport.ts';
import { WebChat } from './transports/web.ts';

export interface RelayParts {
  config: RelayConfig;
  kubeConfig: KubeConfig;
  store: SessionStore & { start(): Promise<void>; stop(): void };
  logger: Logger;
  metrics: RelayMetrics;
  /** replaces the TokenReview check (unit tests only) */
  authorizer?: UploadAuthorizer;
  /** the relay's one clock (tests set it); Date.now by default */
  now?: () => number;
}

export interface RunningRelay {
  url: string;
  server: Server;
  outbox: Outbox;
  /** the per-phone lanes inbound and outbound work runs in; idle() once everything given is done */
  lanes: PhoneLanes;
  /** the phones' Sessions as this relay sees them */
  phones: PhoneView;
  webChat?: WebChat;
  inbound: InboundHandler;
  intake: Intake;
  /** stops taking requests, acts on every recorded message, sends what is queued, stops watching */
  close(): Promise<void>;
}

export async function startRelay(parts: RelayParts, host = parts.config.bindAddress): Promise<RunningRelay> {
  const { config, logger, metrics, store } = parts;
  const now = parts.now ?? Date.now;
  const sessions = new SessionClient(parts.kubeConfig, FIELD_MANAGERS.relay);
  const phones = new PhoneView(store);
  const lanes = new PhoneLanes();
  const defaults = { maxQueued: config.maxQueued, timeouts: config.timeouts };
  const twilio = config.twilio && createTwilioTransport({ ...config.twilio, logger, now });
  const webChat = config.webChat && new WebChat({ ...config.webChat, now });
  const transportFor = (phone: string): Transport =>
    webChat && (phone === webChat.phone || !twilio) ? webChat : twilio!;
  const outbox = new Outbox({
    transportFor,
    mediaUrl: (ref, transport) =>
      signMediaUrl(
        transport.name === 'web' ? '' : config.publicUrl,
        config.media.signingKey,
        ref,
        config.media.urlTtlMs,
        now(),
      ),
    lastInboundAt: (phone) => phones.lastInboundAt(phone),
    templateSid: config.twilio?.templateSid,
    windowMs: config.windowMs,
    ratePerSecond: config.sendRatePerSecond,
    metrics,
    logger,
    now,
  });
  const journal = await Journal.open(config.journalDir, { onSync: (seconds) => metrics.journalSync.observe(seconds) });
  const delivery = new Delivery({
    store,
    writer: sessions,
    lanes,
    outbox,
    progressBatchMs: config.progressBatchMs,
    progressMaxGapMs: config.progressMaxGapMs,
    progressMessages: config.progressMessages,
    sessionMessages: config.sessionMessages,
    reminderBeforeMs: config.reminderBeforeMs,
    defaults,
    isRecipient: (phone) => config.allowedNumbers.has(phone) || phone === webChat?.phone,
    metrics,
    owner: journal.instance,
    logger,
    now,
  });
  // A message's claim lives as long as the request it answered can be open.
  const claims = new ConfigMapClaims(parts.kubeConfig, {
    name: config.claimsConfigMap,
    namespace: config.namespace,
    owner: journal.instance,
    retentionMs: parseDuration(config.timeouts.approval),
  });
  const media = new MediaStore({
    dir: config.media.dir,
    maxBytes: config.media.maxBytes,
    ttlMs: config.media.ttlMs,
    now,
  });
  const pictures = inboundPictures(config, media);
  const inbound = new InboundHandler({
    sessions,
    claims,
    phones,
    lanes,
    outbox,
    namespace: config.namespace,
    repo: config.repo,
    defaults,
    metrics,
    logger,
    repos: phoneRepos(parts),
    cost: config.cost,
    images: pictures?.images,
    concurrency: config.inboundConcurrency,
    owner: journal.instance,
    onRouted: (id, route) => journal.routed(id, route),
  });
  const intake = new Intake({ journal, handler: inbound, maxBacklog: config.inboundBacklog, metrics, logger });
  let ready = false;
  const app = createApp({
    webhook: config.twilio && {
      authToken: config.twilio.authToken,
      webhookUrl: config.webhookUrl,
      allowedNumbers: config.allowedNumbers,
      media: pictures?.source,
    },
    inbound: intake,
    media,
    mediaSigningKey: config.media.signingKey,
    mediaMaxBytes: config.media.maxBytes,
    uploads: config.uploads,
    publicUrl: config.publicUrl,
    authorizer:
      parts.authorizer ??
      new CachedTokenAuthorizer(
        tokenReviewer(parts.kubeConfig),
        config.uploads.review,
        config.runnerNamespace,
        config.namespace,
        now,
      ),
    webChat,
    metrics,
    logger,
    ready: () => ready,
    live: () => journal.healthy,
    namespace: config.namespace,
    now,
  });

  delivery.start();
  store.onChange(foreignRefAuditor(logger));
  await store.start();
  intake.replay();
  ready = true;
  const janitor = setInterval(() => {
    media.prune().then(
      (removed) => removed && logger.info({ removed }, 'expired media removed'),
      (error: unknown) => logger.error({ err: error }, 'media clean-up failed; next run in 10 min'),
    );
  }, 600_000);
  janitor.unref();

  const server = app.listen(config.port, host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  logger.info({ port, transports: [twilio && 'twilio', webChat && 'web'].filter(Boolean) }, 'relay listening');
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    outbox,
    lanes,
    phones,
    webChat,
    inbound,
    intake,
    async close() {
      ready = false;
      clearInterval(janitor);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await intake.idle();
      server.closeAllConnections();
      await closed;
      await intake.idle();
      await delivery.stop();
      store.stop();
      await lanes.idle();
      await journal.close();
    },
  };
}

/** A phone's default repository is kept only when there is a choice (an install with one repository needs no ConfigMap). */
function phoneRepos({ config, kubeConfig }: RelayParts): PhoneRepos {
  const choices =
    config.repos.length > 1
      ? new ConfigMapRepoChoices(kubeConfig, { name: config.repoChoicesConfigMap, namespace: config.namespace })
      : new MemoryRepoChoices();
  return new PhoneRepos(config.repos, choices);
}

/** Pictures from the phone come from Twilio's API, fetched with the account's credentials. */
function inboundPictures(config: RelayConfig, media: MediaStore) {
  const twilio = config.twilio;
  if (!twilio) return undefined;
  const source = { apiOrigin: new URL(twilio.apiUrl ?? TWILIO_API_ORIGIN).origin, accountSid: twilio.accountSid };
  const images = new InboundImages({
    fetch: (url, announced) =>
      fetchTwilioImage(url, announced, { ...source, authToken: twilio.authToken, ...config.inboundImages }),
    store: media,
    namespace: config.namespace,
    maxBytes: config.inboundImages.maxBytes,
  });
  return { source, images };
}
