// Assembles one relay from its configuration and the process-wide parts main.ts owns
// (logger, metrics, kube client, Session informer). Integration tests start several.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConnection } from '../common/kube/connection.ts';
import type { Logger } from 'pino';
import { FIELD_MANAGERS, SessionClient } from '../common/kube/sessions.ts';
import { createApp } from './app.ts';
import type { RelayConfig } from './config.ts';
import { parseDuration } from '../common/session/display.ts';
import { ConfigMapClaims } from './inbound/claims.ts';
import { inboundPictures, openPulls, phoneRepos, type PullActionsFactory } from './inbound/wiring.ts';
import type { PullParts } from './inbound/pull-answers.ts';
import type { GithubWebhookSettings } from './github/webhook.ts';
import { InboundHandler } from './inbound/handler.ts';
import { Intake } from './inbound/intake.ts';
import { Journal } from './inbound/journal.ts';
import type { InboundImages } from './inbound/media-in.ts';
import type { PhoneRepos } from './inbound/phone-repos.ts';
import { PhoneView } from './inbound/phone-view.ts';
import { CachedTokenAuthorizer, tokenReviewer, type UploadAuthorizer } from './media/auth.ts';
import { foreignRefAuditor } from './media/refs.ts';
import { signMediaUrl } from './media/signing.ts';
import { MediaStore, startPruning } from './media/store.ts';
import type { RelayMetrics } from './metrics.ts';
import { Delivery } from './outbound/delivery.ts';
import { Outbox } from './outbound/outbox.ts';
import { PhoneLanes } from './phone-lane.ts';
import type { SessionStore } from './session-store.ts';
import type { SessionDefaults } from '../common/session/defaults.ts';
import type { WebhookSettings } from './inbound/webhook.ts';
import { createTwilioTransport } from './transports/twilio.ts';
import type { Transport } from './transports/transport.ts';
import { WebChat } from './transports/web.ts';

export interface RelayParts {
  config: RelayConfig;
  kubeConfig: KubeConnection;
  store: SessionStore & { start(): Promise<void>; stop(): void };
  logger: Logger;
  metrics: RelayMetrics;
  /** replaces the TokenReview check (unit tests only) */
  authorizer?: UploadAuthorizer;
  /** the relay's one clock (tests set it); Date.now by default */
  now?: () => number;
  /** answers the pull request notices' words (relay/github/actions.ts); absent: "not set up" */
  pullActions?: PullActionsFactory;
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

/** What the relay is built from, beside the process-wide parts: its clock and its durable pieces. */
interface Wiring extends RelayParts {
  now: () => number;
  sessions: SessionClient;
  phones: PhoneView;
  lanes: PhoneLanes;
  journal: Journal;
  defaults: SessionDefaults;
}

export async function startRelay(parts: RelayParts, host = parts.config.bindAddress): Promise<RunningRelay> {
  const { config, logger, store } = parts;
  const repos = phoneRepos(config, parts.kubeConfig);
  const w: Wiring = {
    ...parts,
    now: parts.now ?? Date.now,
    sessions: new SessionClient(parts.kubeConfig, FIELD_MANAGERS.relay),
    phones: new PhoneView(store),
    lanes: new PhoneLanes(),
    journal: await Journal.open(config.journalDir, { onSync: (seconds) => parts.metrics.journalSync.observe(seconds) }),
    defaults: { maxQueued: config.maxQueued, timeouts: config.timeouts },
  };
  const { phones, lanes, journal } = w;
  const { twilio, webChat, transportFor } = transports(w);
  const outbox = outboxOf(w, transportFor);
  const isRecipient = (phone: string) => config.allowedNumbers.has(phone) || phone === webChat?.phone;
  const delivery = deliveryOf(w, outbox, isRecipient);
  const pulls = await openPulls({
    ...w,
    kube: parts.kubeConfig,
    repos,
    outbox,
    isRecipient,
    actions: parts.pullActions,
  });
  const media = new MediaStore({ ...config.media, now: w.now });
  const pictures = inboundPictures(config, media);
  const inbound = inboundOf(w, outbox, { repos, pulls: pulls.parts }, pictures?.images);
  const intake = new Intake({
    journal,
    handler: inbound,
    maxBacklog: config.inboundBacklog,
    metrics: w.metrics,
    logger,
  });
  let ready = false;
  const github = pulls.github.settings;
  const app = appOf(w, { intake, media, webChat, github, webhookMedia: pictures?.source, ready: () => ready });

  delivery.start();
  pulls.recorder.start();
  store.onChange(foreignRefAuditor(logger));
  await store.start();
  intake.replay();
  pulls.github.start();
  ready = true;
  const stopJanitor = startPruning(media, logger);
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
      stopJanitor();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await intake.idle();
      server.closeAllConnections();
      await closed;
      await intake.idle();
      await pulls.close();
      await delivery.stop();
      store.stop();
      await lanes.idle();
      await journal.close();
    },
  };
}

/** Twilio and the web chat, as configured; a phone is reached by the web chat if it is the chat's phone. */
function transports({ config, logger, now }: Wiring) {
  const twilio = config.twilio && createTwilioTransport({ ...config.twilio, logger, now });
  const webChat = config.webChat && new WebChat({ ...config.webChat, now });
  const transportFor = (phone: string): Transport =>
    webChat && (phone === webChat.phone || !twilio) ? webChat : twilio!;
  return { twilio, webChat, transportFor };
}

function outboxOf({ config, metrics, logger, phones, now }: Wiring, transportFor: (phone: string) => Transport) {
  return new Outbox({
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
    phoneHash: config.phoneHash,
  });
}

function deliveryOf(w: Wiring, outbox: Outbox, isRecipient: (phone: string) => boolean): Delivery {
  const { config } = w;
  return new Delivery({
    store: w.store,
    writer: w.sessions,
    lanes: w.lanes,
    outbox,
    progressBatchMs: config.progressBatchMs,
    progressMaxGapMs: config.progressMaxGapMs,
    progressMessages: config.progressMessages,
    sessionMessages: config.sessionMessages,
    reminderBeforeMs: config.reminderBeforeMs,
    defaults: w.defaults,
    isRecipient,
    metrics: w.metrics,
    owner: w.journal.instance,
    logger: w.logger,
    now: w.now,
    phoneHash: config.phoneHash,
  });
}

function inboundOf(
  w: Wiring,
  outbox: Outbox,
  { repos, pulls }: { repos: PhoneRepos; pulls: PullParts },
  images: InboundImages | undefined,
): InboundHandler {
  const { config, journal } = w;
  // A message's claim lives as long as the request it answered can be open.
  const claims = new ConfigMapClaims(w.kubeConfig, {
    name: config.claimsConfigMap,
    namespace: config.namespace,
    owner: journal.instance,
    retentionMs: parseDuration(config.timeouts.approval),
    now: w.now,
  });
  return new InboundHandler({
    now: w.now,
    sessions: w.sessions,
    claims,
    phones: w.phones,
    lanes: w.lanes,
    outbox,
    namespace: config.namespace,
    repo: config.repo,
    defaults: w.defaults,
    metrics: w.metrics,
    logger: w.logger,
    phoneHash: config.phoneHash,
    repos,
    pulls,
    cost: config.cost,
    images,
    concurrency: config.inboundConcurrency,
    owner: journal.instance,
    onRouted: (id, route) => journal.routed(id, route),
  });
}

interface AppParts {
  intake: Intake;
  media: MediaStore;
  webChat: WebChat | undefined;
  github: GithubWebhookSettings | undefined;
  webhookMedia: WebhookSettings['media'];
  ready(): boolean;
}

function appOf(w: Wiring, { intake, media, webChat, github, webhookMedia, ready }: AppParts) {
  const { config } = w;
  return createApp({
    webhook: config.twilio && {
      authToken: config.twilio.authToken,
      webhookUrl: config.webhookUrl,
      allowedNumbers: config.allowedNumbers,
      media: webhookMedia,
    },
    github,
    inbound: intake,
    media,
    mediaSigningKey: config.media.signingKey,
    mediaMaxBytes: config.media.maxBytes,
    uploads: config.uploads,
    publicUrl: config.publicUrl,
    authorizer:
      w.authorizer ??
      new CachedTokenAuthorizer(
        tokenReviewer(w.kubeConfig),
        config.uploads.review,
        config.runnerNamespace,
        config.namespace,
        w.now,
        (namespace, session) => w.store.get(`${namespace}/${session}`)?.status?.podName,
      ),
    webChat,
    metrics: w.metrics,
    logger: w.logger,
    ready,
    live: () => w.journal.healthy,
    namespace: config.namespace,
    now: w.now,
  });
}
