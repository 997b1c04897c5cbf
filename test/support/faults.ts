// Helpers of the fault-injection suites: the controller as a real OS
// process (to SIGKILL), and a watch that records every Session, Pod and PVC change it sees.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import type { KubeConfig, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { join } from 'node:path';
import pino from 'pino';
import { createInformer, type Informer } from '../../common/kube/informer.ts';
import { sessionsPath } from '../../common/kube/sessions.ts';
import type { Phase, Session } from '../../common/session/schema.ts';
import { hostEnv } from '../../local/config.ts';
import { freePort } from '../../local/control-plane/control-plane.ts';
import { startManaged, untilHttpOk, type Managed } from '../../local/control-plane/processes.ts';
import { TEST_PHONE_HASH_KEY } from './phone-hash.ts';

export interface ControllerProcess {
  proc: Managed;
  /** Resolves once /readyz answers 200 (informers synced); rejects if the process exits first. */
  ready: Promise<void>;
  /** Its /metrics. */
  metricsUrl: string;
}

/** `node controller/main.ts` on a namespace, as a process of its own (its output in `logDir`). */
export async function controllerProcess(
  kubeconfig: string,
  namespace: string,
  logDir: string,
  env: Record<string, string> = {},
): Promise<ControllerProcess> {
  const repoRoot = join(import.meta.dirname, '../..');
  const port = await freePort();
  const proc = startManaged(
    'controller',
    process.execPath,
    [join(repoRoot, 'controller/main.ts')],
    join(logDir, 'controller.log'),
    {
      cwd: repoRoot,
      env: {
        ...hostEnv(),
        KUBECONFIG: kubeconfig,
        TETHER_NAMESPACE: namespace,
        TETHER_LEADER_ELECTION: 'false',
        TETHER_METRICS_PORT: String(port),
        TETHER_RUNNER_IMAGE: 'tether-runner:test',
        TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
        TETHER_LOG_LEVEL: 'warn',
        ...env,
      },
    },
  );
  const ready = untilHttpOk(`http://127.0.0.1:${port}/readyz`, proc, 120_000, 50);
  ready.catch(() => undefined);
  return { proc, ready, metricsUrl: `http://127.0.0.1:${port}/metrics` };
}

export interface Recording {
  /** Each Session's phases in the order the watch saw them, a phase listed again each time it is entered again. */
  phases: Map<string, Phase[]>;
  /** Every uid seen under each Pod and PVC name. */
  podUids: Map<string, Set<string>>;
  pvcUids: Map<string, Set<string>>;
  stop(): void;
}

/** Watches a namespace's Sessions, Pods and PVCs for the whole of a fault run. */
export async function record(kc: KubeConfig, namespace: string): Promise<Recording> {
  const logger = pino({ level: 'silent' });
  const phases = new Map<string, Phase[]>();
  const podUids = new Map<string, Set<string>>();
  const pvcUids = new Map<string, Set<string>>();
  const sessions = createInformer<Session>({
    kube: connectionFromKubeConfig(kc),
    path: sessionsPath(namespace),
    logger,
  });
  sessions.onChange((key, s) => {
    const phase = s?.status?.phase;
    const seen = phases.get(key) ?? [];
    if (phase && seen.at(-1) !== phase) phases.set(key, [...seen, phase]);
  });
  const uids = <T extends V1Pod | V1PersistentVolumeClaim>(
    path: string,
    into: Map<string, Set<string>>,
  ): Informer<T> => {
    const informer = createInformer<T>({ kube: connectionFromKubeConfig(kc), path, logger });
    informer.onChange((key, o) => {
      if (o?.metadata?.uid) into.set(key, (into.get(key) ?? new Set()).add(o.metadata.uid));
    });
    return informer;
  };
  const informers = [
    sessions,
    uids(`/api/v1/namespaces/${namespace}/pods`, podUids),
    uids(`/api/v1/namespaces/${namespace}/persistentvolumeclaims`, pvcUids),
  ];
  await Promise.all(informers.map((i) => i.start()));
  return { phases, podUids, pvcUids, stop: () => informers.forEach((i) => i.stop()) };
}
