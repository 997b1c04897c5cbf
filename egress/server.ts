// The egress proxy started: the Sessions and runner Pods informers and the grants ConfigMap in memory first, then the
// port (createApp). Stops in the reverse order.
import type { Server } from 'node:http';
import type { KubeConnection } from '../common/kube/connection.ts';
import type { Logger } from '../common/log.ts';
import { createApp } from './app.ts';
import { Asks } from './asks.ts';
import type { EgressConfig } from './config.ts';
import { configMapGrants } from './grants.ts';
import type { EgressMetrics } from './metrics.ts';
import { informedPods } from './pods.ts';
import { informedSessions } from './sessions.ts';

export interface RunningEgress {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function startEgress(deps: {
  config: EgressConfig;
  kube: KubeConnection;
  logger: Logger;
  metrics: EgressMetrics;
}): Promise<RunningEgress> {
  const { config, kube, logger, metrics } = deps;
  const sessions = informedSessions(kube, config.namespace, logger);
  const pods = informedPods(kube, config.runnerNamespace, logger);
  const grants = configMapGrants({
    kube,
    namespace: config.namespace,
    name: config.grantsConfigMap,
    maxEntries: config.limits.grantEntriesPerRepository,
    logger,
  });
  const asks = new Asks({
    askWaitMs: config.limits.askWaitMs,
    maxWaitingPerSession: config.limits.maxWaitingPerSession,
    maxAsksPerSession: config.limits.maxAsksPerSession,
    counted: (answer) => metrics.asks.inc({ answer }),
    persistRepositoryGrant: (session, entry) => {
      const repoUrl = sessions.get(session)?.repoUrl;
      if (!repoUrl) return;
      grants.add(repoUrl, entry).catch((error: unknown) => {
        metrics.grantWriteFailures.inc();
        logger.warn({ err: error, session }, 'a repository grant is kept in memory only: the ConfigMap write failed');
      });
    },
  });
  await Promise.all([sessions.start(), pods.start(), grants.start()]);
  const server = createApp({ config, sessions, pods, grants, asks, metrics, logger });
  await new Promise<void>((resolve) => server.listen(config.port, config.listen, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ port, listen: config.listen }, 'egress proxy listening');
  return {
    server,
    port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      sessions.stop();
      pods.stop();
      grants.stop();
    },
  };
}
