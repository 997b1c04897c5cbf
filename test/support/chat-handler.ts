// The relay's inbound handler over an in-memory Session store, answering through a web chat: what
// unit tests of commands and replies build.
import type { Logger } from 'pino';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import { InboundHandler, type InboundOptions } from '../../relay/inbound/handler.ts';
import { PhoneView } from '../../relay/inbound/phone-view.ts';
import type { RelayMetrics } from '../../relay/metrics.ts';
import { Outbox } from '../../relay/outbound/outbox.ts';
import { PhoneLanes } from '../../relay/phone-lane.ts';
import type { SessionApi } from '../../relay/session-store.ts';
import type { WebChat } from '../../relay/transports/web.ts';
import type { MemorySessions } from './memory-sessions.ts';
import { testPhoneHash } from './phone-hash.ts';

export interface ChatHandlerParts {
  store: MemorySessions;
  chat: WebChat;
  metrics: RelayMetrics;
  logger: Logger;
  /** where Sessions are written (default: the store) */
  sessions?: SessionApi;
}

/** A handler with every claim granted unless `more` says otherwise, the install's defaults and sample repository. */
export function chatHandler(parts: ChatHandlerParts, more: Partial<InboundOptions> = {}): InboundHandler {
  const { store, chat, metrics, logger } = parts;
  const outbox = new Outbox({
    phoneHash: testPhoneHash,
    transportFor: () => chat,
    mediaUrl: (r) => r,
    lastInboundAt: () => Date.now(),
    windowMs: 1e9,
    ratePerSecond: 1000,
    metrics,
    logger,
  });
  return new InboundHandler({
    phoneHash: testPhoneHash,
    sessions: parts.sessions ?? store,
    claims: { claim: async () => true },
    phones: new PhoneView(store),
    lanes: new PhoneLanes(),
    outbox,
    namespace: 'ns',
    repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
    defaults: SESSION_DEFAULTS,
    metrics,
    logger,
    ...more,
  });
}
