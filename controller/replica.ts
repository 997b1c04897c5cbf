// One controller replica: it stands by until it holds the leader Lease, then runs the
// controller (and, with a GitHub App, the relay's token keeper); it stops them when it loses or
// releases the Lease.
import type { KubeConnection } from '../common/kube/connection.ts';
import type pino from 'pino';
import { createLeaderElector, type LeaderElector } from '../common/kube/leader-election.ts';
import type { ControllerConfig } from './config.ts';
import { createController, type Controller } from './controller.ts';
import { githubApp } from './github-app.ts';
import type { ControllerMetrics } from './metrics.ts';
import { keepRelayToken } from './relay-token.ts';

export interface ReplicaOptions {
  kubeConfig: KubeConnection;
  config: ControllerConfig;
  logger: pino.Logger;
  metrics: ControllerMetrics;
  lease?: { durationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  /** Leadership ended without stop() being called (main.ts exits the process). */
  onLostLeadership?: () => void;
}

export interface Replica {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly leading: boolean;
  readonly controller: Controller | undefined;
  /** Ready to serve: caches synced while leading, or standing by. */
  ready(): boolean;
}

export function createReplica(options: ReplicaOptions): Replica {
  const { kubeConfig, config, logger, metrics } = options;
  let controller: Controller | undefined;
  let elector: LeaderElector | undefined;
  let stopping = false;
  let transitions: Promise<void> = Promise.resolve();

  let relayToken: { stop(): void } | undefined;

  const lead = async () => {
    metrics.setLeader(true);
    controller = createController({ kubeConfig, config, logger, metrics });
    await controller.start();
    const app = config.githubApp;
    if (app?.relaySecret) {
      const { namespace } = config;
      relayToken = keepRelayToken({ kube: kubeConfig, app: githubApp(app), namespace, name: app.relaySecret, logger });
    }
  };
  const follow = async () => {
    metrics.setLeader(false);
    relayToken?.stop();
    const current = controller;
    controller = undefined;
    await current?.stop();
    if (!stopping) options.onLostLeadership?.();
  };
  const serially = (step: () => Promise<void>) => {
    transitions = transitions.then(step).catch((err: unknown) => {
      logger.fatal({ err }, 'controller failed to start or stop');
      options.onLostLeadership?.();
    });
  };

  return {
    async start() {
      if (!config.leaderElection) return lead();
      elector = createLeaderElector({
        kubeConfig,
        namespace: config.namespace,
        name: config.leaseName,
        identity: config.identity,
        logger,
        leaseDurationMs: options.lease?.durationMs,
        renewDeadlineMs: options.lease?.renewDeadlineMs,
        retryPeriodMs: options.lease?.retryPeriodMs,
        onStartedLeading: () => serially(lead),
        onStoppedLeading: () => serially(follow),
      });
      elector.start();
    },
    async stop() {
      stopping = true;
      if (elector) await elector.stop();
      await transitions;
      relayToken?.stop();
      await controller?.stop();
      controller = undefined;
    },
    get leading() {
      return controller !== undefined;
    },
    get controller() {
      return controller;
    },
    ready: () => (controller ? controller.synced : elector !== undefined),
  };
}
