// The relay's GitHub App token, kept by the leading controller: a Secret in the release namespace
// (its one name, the only Secret the controller may read) holding an installation token for every
// repository of the installation, minted again when less than RENEW_BEFORE_MS is left. When it
// expires is stored on the Secret; the relay reads the file at each call.
import type { V1Secret } from '@kubernetes/client-node';
import type pino from 'pino';
import type { KubeConnection } from '../common/kube/connection.ts';
import { KINDS, resource } from '../common/kube/resources.ts';
import { FIELD_MANAGERS } from '../common/kube/sessions.ts';
import { LABEL_COMPONENT, LABEL_PART_OF } from '../common/session/names.ts';
import { putSecret } from './cluster.ts';
import { RELAY_PERMISSIONS, type GitHubApp } from './github-app.ts';
import { ANNOTATION_TOKEN_EXPIRES, GITHUB_TOKEN_KEY, RENEW_BEFORE_MS } from './runner-token.ts';

/** After a failed round (GitHub or the API server unreachable), the next try. */
export const RELAY_TOKEN_RETRY_MS = 30_000;

export interface RelayTokenOptions {
  kube: KubeConnection;
  app: GitHubApp;
  namespace: string;
  name: string;
  logger: pino.Logger;
  now?: () => Date;
}

export function relayTokenSecret(namespace: string, name: string, token: string, expiresAt: string): V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: { [LABEL_COMPONENT]: 'relay-github', [LABEL_PART_OF]: 'tether' },
      annotations: { [ANNOTATION_TOKEN_EXPIRES]: expiresAt },
    },
    type: 'Opaque',
    data: { [GITHUB_TOKEN_KEY]: Buffer.from(token).toString('base64') },
  };
}

/** Keeps the relay's token until stopped: a round now, then one at each renewal time. */
export function keepRelayToken(options: RelayTokenOptions): { stop(): void } {
  const { kube, app, namespace, name, logger } = options;
  const now = options.now ?? (() => new Date());
  const secrets = resource<V1Secret>(kube, KINDS.secrets, FIELD_MANAGERS.controller);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /** Renews the token when due; returns the ms until the next renewal. */
  const round = async (): Promise<number> => {
    const current = await secrets.get(namespace, name);
    const due = Date.parse(current?.metadata?.annotations?.[ANNOTATION_TOKEN_EXPIRES] ?? '') - RENEW_BEFORE_MS;
    if (due > now().getTime()) return due - now().getTime();
    const minted = await app.mint({ permissions: { ...RELAY_PERMISSIONS } });
    await putSecret(secrets, relayTokenSecret(namespace, name, minted.token, minted.expiresAt));
    logger.info({ secret: name, expiresAt: minted.expiresAt }, "wrote the relay's GitHub App token");
    return Date.parse(minted.expiresAt) - RENEW_BEFORE_MS - now().getTime();
  };
  const schedule = (ms: number) => {
    if (!stopped) timer = setTimeout(run, Math.max(1000, ms));
  };
  function run() {
    round().then(schedule, (err: unknown) => {
      // The relay keeps the token it has (valid for RENEW_BEFORE_MS more at least); the next try is soon.
      logger.warn({ err, secret: name, retryInMs: RELAY_TOKEN_RETRY_MS }, "could not renew the relay's GitHub token");
      schedule(RELAY_TOKEN_RETRY_MS);
    });
  }
  run();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
