// The relay's defaults that its code and its configuration share (relay/config-schema.ts offers
// them as the variables' defaults; the modules that use them import them from here).

/** How often a run may speak, unless the install says otherwise (relay/outbound/cadence.ts). */
export const BUDGET_DEFAULTS = {
  progressBatchMs: 15_000,
  progressMaxGapMs: 60_000,
  progressMessages: 6,
  sessionMessages: 30,
};

/**
 * Messages acted on at once. Their API calls complete in clusters, and each completion runs its
 * reply and the next message on the event loop in one go: 16 made those runs long enough to
 * delay acknowledgements by tens of ms without creating Sessions any faster (docs/relay.md, "Benchmark").
 */
export const INBOUND_CONCURRENCY = 8;
