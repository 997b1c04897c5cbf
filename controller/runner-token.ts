// A runner Pod's GitHub App token: minted for the Session's one repository with the runner's
// permissions, written to the Pod's own Secret (`<pod>-github`, owned by the Pod, so it goes with
// it) that only the runner container mounts, and minted again when less than RENEW_BEFORE_MS is
// left. When it expires is stored on the Pod (an annotation the Pod cache holds): the controller
// never reads a Secret, and the pass looks again at the renewal time (requeueAfter).
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Session } from '../common/session/schema.ts';
import { RUNNER_PERMISSIONS, type GitHubApp } from './github-app.ts';
import { podOwnedSecret } from './pod-secret.ts';

/** An installation token lives an hour; the runner's is renewed when less than this is left. */
export const RENEW_BEFORE_MS = 20 * 60 * 1000;
/** When the token in the Pod's Secret expires (ISO 8601). */
export const ANNOTATION_TOKEN_EXPIRES = 'tether.dev/github-token-expires-at';
export const RUNNER_TOKEN_COMPONENT = 'runner-github';
/** Where the runner container (only) mounts its Secret, and the file it reads at each use. */
export const GITHUB_TOKEN_DIR = '/var/run/secrets/tether/github';
export const GITHUB_TOKEN_KEY = 'token';

export const runnerTokenSecretName = (podName: string) => `${podName}-github`;

/** The repository's name on the forge: the last component of its URL or path, without `.git`. */
export function repositoryName(url: string): string {
  const name = url
    .replace(/\/+$/, '')
    .replace(/\.git$/, '')
    .split('/')
    .at(-1);
  if (!name) throw new Error(`cannot tell the repository's name from ${url}`);
  return name;
}

/** The Pod's token Secret: owned by the Pod (the garbage collector removes it with the Pod). */
export const desiredTokenSecret = (pod: V1Pod, token: string, expiresAt: string): V1Secret =>
  podOwnedSecret(pod, {
    name: runnerTokenSecretName(pod.metadata!.name!),
    component: RUNNER_TOKEN_COMPONENT,
    data: { [GITHUB_TOKEN_KEY]: token },
    annotations: { [ANNOTATION_TOKEN_EXPIRES]: expiresAt },
  });

/** When the Pod's token needs renewing (ms since the epoch); 0 when it has none yet. */
export function renewalDue(pod: V1Pod): number {
  const expires = Date.parse(pod.metadata?.annotations?.[ANNOTATION_TOKEN_EXPIRES] ?? '');
  return Number.isFinite(expires) ? expires - RENEW_BEFORE_MS : 0;
}

/** A Pod still running (or about to) needs its token; a finished or going one does not. */
export const needsToken = (pod: V1Pod) =>
  !pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';

export interface TokenWrites {
  /** Creates the Secret, or replaces the one of that name (never reads it). */
  putSecret(secret: V1Secret): Promise<void>;
  /** Records the token's expiry on the Pod; returns the Pod as written. */
  annotatePod(namespace: string, name: string, annotations: Record<string, string>): Promise<V1Pod>;
}

/**
 * Keeps the Pod's token: minted now when none is recorded or renewal is due, else nothing. Returns
 * when to look again (ms from now) and the Pod as annotated when it wrote one.
 */
export async function keepRunnerToken(
  session: Session,
  pod: V1Pod,
  app: GitHubApp,
  writes: TokenWrites,
  now: Date,
): Promise<{ requeueAfterMs: number; annotated?: V1Pod }> {
  const due = renewalDue(pod);
  if (due > now.getTime()) return { requeueAfterMs: due - now.getTime() };
  const { name, namespace } = pod.metadata as { name: string; namespace: string };
  const minted = await app.mint({
    repositories: [repositoryName(session.spec.repo.url)],
    permissions: { ...RUNNER_PERMISSIONS },
  });
  await writes.putSecret(desiredTokenSecret(pod, minted.token, minted.expiresAt));
  const annotated = await writes.annotatePod(namespace, name, { [ANNOTATION_TOKEN_EXPIRES]: minted.expiresAt });
  const next = Date.parse(minted.expiresAt) - RENEW_BEFORE_MS - now.getTime();
  return { requeueAfterMs: Math.max(1000, next), annotated };
}
