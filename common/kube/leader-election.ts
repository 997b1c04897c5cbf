// Lease-based leader election (coordination.k8s.io/v1), after client-go's leaderelection:
// expiry is judged by when *we* last saw the record change (no clock-skew trust), the
// leader renews every retry period and steps down if it cannot renew within the deadline,
// and a stopping leader releases the Lease so a follower takes over at once.
import type { V1Lease } from '@kubernetes/client-node';
import type pino from 'pino';
import type { KubeConnection } from './connection.ts';
import { isAlreadyExists, isConflict } from './errors.ts';
import { KINDS, resource } from './resources.ts';

/** A MicroTime as the API server writes it (RFC 3339, microseconds). */
const microTime = () => new Date().toISOString().replace(/Z$/, '000Z');

/** The one Lease, read and written through its typed handle (no client-node in the controller). */
function leaseApi(kube: KubeConnection, namespace: string, name: string) {
  const leases = resource<V1Lease>(kube, KINDS.leases);
  return {
    read: () => leases.get(namespace, name),
    create: (spec: V1Lease['spec']) => leases.create({ metadata: { name, namespace }, spec }),
    replace: (lease: V1Lease) => leases.replace(lease),
  };
}

export interface LeaderElectionOptions {
  kubeConfig: KubeConnection;
  namespace: string;
  name: string;
  identity: string;
  logger: pino.Logger;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  onNewLeader?: (identity: string) => void;
}

export interface LeaderElector {
  start(): void;
  /** Steps down (releasing the Lease if held) and stops trying. */
  stop(): Promise<void>;
  readonly isLeader: boolean;
}

export function createLeaderElector(options: LeaderElectionOptions): LeaderElector {
  const { namespace, name, identity, logger } = options;
  const api = leaseApi(options.kubeConfig, namespace, name);
  const leaseMs = options.leaseDurationMs ?? 15_000;
  const renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
  const retryMs = options.retryPeriodMs ?? 2_000;

  let leader = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let loop: Promise<void> = Promise.resolve();
  let lastRenew = 0;
  let observed: { record: string; at: number } | undefined;
  let lastHolder = '';

  const spec = (current: V1Lease | undefined, transitions: number): V1Lease['spec'] => {
    const now = microTime() as unknown as Date;
    const keepAcquire = current?.spec?.holderIdentity === identity;
    return {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseMs / 1000),
      acquireTime: keepAcquire ? current?.spec?.acquireTime : now,
      renewTime: now,
      leaseTransitions: transitions,
    };
  };

  /** One try to acquire or renew; true when we hold the Lease afterwards. */
  async function tryAcquireOrRenew(): Promise<boolean> {
    const current = await api.read();
    if (!current) {
      await api.create(spec(undefined, 0));
      return true;
    }
    const holder = current.spec?.holderIdentity ?? '';
    const record = JSON.stringify([holder, current.spec?.renewTime, current.spec?.leaseDurationSeconds]);
    if (observed?.record !== record) observed = { record, at: Date.now() };
    if (holder !== lastHolder) {
      lastHolder = holder;
      if (holder) options.onNewLeader?.(holder);
    }
    const heldByOther = holder !== '' && holder !== identity;
    const expiresAt = observed.at + (current.spec?.leaseDurationSeconds ?? 0) * 1000;
    if (heldByOther && Date.now() < expiresAt) return false;
    const transitions = (current.spec?.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
    await api.replace({ ...current, spec: spec(current, transitions) });
    return true;
  }

  function setLeader(value: boolean): void {
    if (leader === value) return;
    leader = value;
    logger.info(
      { lease: `${namespace}/${name}`, identity, leader: value },
      value ? 'became leader' : 'stopped leading',
    );
    if (value) options.onStartedLeading();
    else options.onStoppedLeading();
  }

  async function tick(): Promise<void> {
    let held = false;
    try {
      held = await tryAcquireOrRenew();
    } catch (error) {
      if (!isConflict(error) && !isAlreadyExists(error)) logger.warn({ err: error }, 'lease acquire/renew failed');
    }
    if (stopped) return;
    if (held) {
      lastRenew = Date.now();
      setLeader(true);
    } else if (leader && Date.now() - lastRenew > renewDeadlineMs) {
      setLeader(false);
    } else if (leader && lastHolder !== identity && lastHolder !== '') {
      setLeader(false);
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      loop = tick().finally(schedule);
    }, retryMs);
  }

  async function release(): Promise<void> {
    const current = await api.read();
    if (current?.spec?.holderIdentity !== identity) return;
    await api.replace({
      ...current,
      spec: { ...current.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime() as unknown as Date },
    });
  }

  return {
    start() {
      loop = tick().finally(schedule);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await loop;
      if (!leader) return;
      try {
        await release();
      } finally {
        setLeader(false);
      }
    },
    get isLeader() {
      return leader;
    },
  };
}
