// The relay's Prometheus metrics, on a registry of its own.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { collectProcessMetrics } from '../common/process-metrics.ts';

type Registers = Registry[];

/** The webhook and the inbound path. */
function inboundMetrics(registers: Registers) {
  return {
    webhookRequests: new Counter({
      name: 'tether_relay_webhook_requests_total',
      help: 'Webhook requests by outcome',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webhookDuration: new Histogram({
      name: 'tether_relay_webhook_duration_seconds',
      help: 'Time to acknowledge a webhook',
      registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    }),
    duplicates: new Counter({
      name: 'tether_relay_duplicates_total',
      help: 'Inbound messages seen before (same MessageSid)',
      registers,
    }),
    signatureFailures: new Counter({
      name: 'tether_relay_signature_failures_total',
      help: 'Webhooks with a bad or missing signature',
      registers,
    }),
    inboundBacklog: new Gauge({
      name: 'tether_relay_inbound_backlog',
      help: 'Inbound messages recorded in the journal and not yet acted on',
      registers,
    }),
    journalSync: new Histogram({
      name: 'tether_relay_journal_sync_seconds',
      help: 'Time of one inbound journal fdatasync (after the acknowledgement, not before it)',
      registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    }),
    inboundFailures: new Counter({
      name: 'tether_relay_inbound_failures_total',
      help: 'Accepted messages whose processing failed',
      registers,
    }),
  };
}

/** Sending. */
function outboundMetrics(registers: Registers) {
  return {
    messagesSent: new Counter({
      name: 'tether_relay_messages_sent_total',
      help: 'Outbound messages by result',
      labelNames: ['result'] as const,
      registers,
    }),
    sendDuration: new Histogram({
      name: 'tether_relay_send_duration_seconds',
      help: 'Time of one outbound send call',
      registers,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
    outboundQueueDepth: new Gauge({
      name: 'tether_relay_outbound_queue_depth',
      help: 'Outbound jobs waiting or running',
      registers,
    }),
    recipientsRefused: new Counter({
      name: 'tether_relay_recipients_refused_total',
      help: 'Sessions whose spec.phone is not on the allowlist (nothing sent)',
      registers,
    }),
  };
}

/** The GitHub webhook and what its events did. */
function githubMetrics(registers: Registers) {
  return {
    githubWebhookRequests: new Counter({
      name: 'tether_relay_github_webhook_requests_total',
      help: 'GitHub webhook deliveries by outcome (rejected_401: bad or missing signature)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    githubWebhookDuration: new Histogram({
      name: 'tether_relay_github_webhook_duration_seconds',
      help: 'Time to acknowledge a GitHub webhook delivery',
      registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    }),
    githubEvents: new Counter({
      name: 'tether_relay_github_events_total',
      help: 'Pull request events from GitHub by kind and outcome (told: the phone was sent a notice)',
      labelNames: ['kind', 'outcome'] as const,
      registers,
    }),
    githubBacklog: new Gauge({
      name: 'tether_relay_github_backlog',
      help: 'GitHub deliveries journaled and not yet acted on',
      registers,
    }),
  };
}

/** Runner uploads. */
function mediaMetrics(registers: Registers) {
  return {
    mediaUploads: new Counter({
      name: 'tether_relay_media_uploads_total',
      help: 'Media uploads by outcome',
      labelNames: ['outcome'] as const,
      registers,
    }),
  };
}

export function createMetrics(options: { defaults?: boolean } = {}) {
  const registry = new Registry();
  if (options.defaults) collectProcessMetrics(registry);
  const registers = [registry];
  return {
    registry,
    ...inboundMetrics(registers),
    ...outboundMetrics(registers),
    ...mediaMetrics(registers),
    ...githubMetrics(registers),
  };
}
export type RelayMetrics = ReturnType<typeof createMetrics>;
