// The admission floor: what this API server can do, with no controller, for the least a steady-state
// admission must write. The benchmark's client creates BURST Sessions (as the burst does) and, for each
// one created, makes the controller's own three writes — the phone's runner Role naming the Session, the
// runner Pod, the Session's status — with the controller's own builders and request shapes
// (controller/cluster.ts), at the controller's concurrency. No cache, no re-read, no reconcile pass: a
// controller can only come near this rate, never above it.
import { connectionFromKubeConfig } from '../common/kube/connection.ts';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig, type V1Role } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { LABEL_PHONE_HASH, sessionName, workspaceName } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { SessionClient } from '../common/kube/sessions.ts';
import { desiredPod } from '../controller/builders.ts';
import { desiredIdentity } from '../controller/identity.ts';
import { kubeClusterOps } from '../controller/cluster.ts';
import { loadConfig } from '../controller/config.ts';
import { take } from '../controller/decide.ts';
import { computeStatus } from '../controller/status.ts';

const NS = 'bench-floor';
const RUNNERS = 'bench-floor-runners';

export interface FloorOptions {
  burst: number;
  /** The controller's workers (TETHER_CONCURRENCY). */
  concurrency: number;
  /** The benchmark's own creators, as in the burst. */
  creators: number;
  phoneOf(i: number): string;
  /** Retries transport errors and 429/5xx, as the benchmark's own calls do. */
  retrying<T>(call: () => Promise<T>): Promise<T | undefined>;
  pool<T>(items: T[], width: number, work: (item: T, i: number) => Promise<void>): Promise<void>;
  /** Wraps the timed part (the benchmark profiles the API server there). */
  timed(work: () => Promise<void>): Promise<void>;
}

/** At most `width` calls at once; the rest wait their turn in order. */
function limiter(width: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(call: () => Promise<T>): Promise<T> => {
    // A finished call hands its slot straight to the next in line.
    if (running < width) running++;
    else await new Promise<void>((r) => waiting.push(r));
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** Admissions per second of the floor, over the same burst shape. */
export async function admissionFloor(kc: KubeConfig, o: FloorOptions): Promise<number> {
  for (const name of [NS, RUNNERS]) await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  const config = loadConfig({
    TETHER_NAMESPACE: NS,
    TETHER_RUNNER_NAMESPACE: RUNNERS,
    TETHER_PHONE_HASH_KEY: randomBytes(32).toString('hex'),
  });
  const { phoneHash } = config;
  const ops = kubeClusterOps(connectionFromKubeConfig(kc));
  const sessions = new SessionClient(connectionFromKubeConfig(kc));
  const phones = Array.from({ length: o.burst }, (_, i) => o.phoneOf(i));
  const spec = (phone: string) => ({
    phone,
    prompt: 'script:\nprogress: bench',
    repo: { url: 'https://github.com/acme/web.git' },
    workspace: workspaceName(phoneHash(phone)),
  });
  // Untimed, as the first command of each phone: its ServiceAccount, Role and RoleBinding.
  const roles = new Map<string, V1Role>();
  await o.pool(phones, o.creators, async (phone) => {
    const seed = {
      metadata: { name: sessionName(phoneHash(phone), new Date(), 'fl0'), namespace: NS },
      spec: spec(phone),
    } as Session;
    await o.retrying(() => ops.ensureIdentity(desiredIdentity(seed, [seed.metadata.name!], config)));
  });
  const roleList = await kc.makeApiClient(RbacAuthorizationV1Api).listNamespacedRole({ namespace: NS });
  for (const role of roleList.items) roles.set(role.metadata!.name!, role);

  const admit = limiter(o.concurrency);
  const admissions: Promise<void>[] = [];
  const start = performance.now();
  await o.timed(() =>
    o
      .pool(phones, o.creators, async (phone) => {
        const name = sessionName(phoneHash(phone), new Date(), 'fl1');
        const session = await o.retrying(() =>
          sessions.create(NS, name, spec(phone), { labels: { [LABEL_PHONE_HASH]: phoneHash(phone) } }),
        );
        if (!session) throw new Error(`floor: ${name} already exists`);
        admissions.push(
          admit(async () => {
            const identity = desiredIdentity(session, [name], config);
            const role = roles.get(identity.role.metadata!.name!)!;
            const [, pod] = await Promise.all([
              o.retrying(() => ops.ensureIdentity(identity, { role, bound: true })),
              o.retrying(() => ops.ensurePod(desiredPod(session, config))),
            ]);
            const status = computeStatus({
              session,
              now: new Date(),
              step: take(session, { type: 'PodCreated' }),
              pod: { name: pod!.metadata!.name!, createdAt: pod!.metadata?.creationTimestamp },
            });
            await o.retrying(() => ops.patchStatus(NS, name, status.patch!, session.metadata.resourceVersion!));
          }),
        );
      })
      .then(() => Promise.all(admissions))
      .then(() => undefined),
  );
  return o.burst / ((performance.now() - start) / 1000);
}
