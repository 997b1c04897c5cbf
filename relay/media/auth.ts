// Who may upload media for a Session: its runner, proven by a projected ServiceAccount token
// (audience tether-relay) checked with a TokenReview: a runner ServiceAccount of the runner
// namespace, the token bound to the Session's runner Pod (the API server's pod-name claim): the Pod its
// status.podName names — a live Pod bound to it, or a replacement — else the one made for it.
// Answers, good and bad, are remembered briefly (bounded), and concurrent checks of one token
// share a single review.
import { createHash } from 'node:crypto';
import type { V1TokenReview } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource } from '../../common/kube/resources.ts';
import { RELAY_TOKEN_AUDIENCE, RUNNER_IDENTITY_PREFIX, runnerName } from '../../common/session/names.ts';
import type { UploadLimits } from '../config.ts';
import { LRUCache } from 'lru-cache';

export interface UploadAuthorizer {
  /** true when the bearer token belongs to the runner of namespace/session. */
  mayUpload(token: string, namespace: string, session: string): Promise<boolean>;
}

/** Who a token authenticates as for the relay's audience, and the Pod it is bound to. */
export interface Reviewed {
  user: string;
  pod?: string;
}
/** undefined when the token is not valid for the relay's audience. */
export type ReviewToken = (token: string) => Promise<Reviewed | undefined>;

const POD_NAME_CLAIM = 'authentication.kubernetes.io/pod-name';

export function tokenReviewer(kube: KubeConnection): ReviewToken {
  const reviews = resource<V1TokenReview>(kube, KINDS.tokenReviews);
  return async (token) => {
    const { status } = await reviews.create({ spec: { token, audiences: [RELAY_TOKEN_AUDIENCE] } });
    if (!status?.authenticated || !status.audiences?.includes(RELAY_TOKEN_AUDIENCE) || !status.user?.username)
      return undefined;
    return { user: status.user.username, pod: status.user.extra?.[POD_NAME_CLAIM]?.[0] };
  };
}

/** The runner Pod a Session's status names (status.podName), as this relay sees it; undefined when not known. */
export type SessionPod = (namespace: string, session: string) => string | undefined;

export class CachedTokenAuthorizer implements UploadAuthorizer {
  private readonly runnerNamespace: string;
  private readonly podOf: SessionPod;
  private readonly sessionNamespace: string;
  /** token hash → answer (false: not valid); a review under way is shared by every check of its token */
  private readonly answers: LRUCache<string, Reviewed | false, string>;
  /** TokenReviews sent (a test reads it to see the cache work). */
  reviews = 0;

  /** runnerNamespace: where runner Pods and their ServiceAccounts live; sessionNamespace: where Sessions do. */
  constructor(
    review: ReviewToken,
    ttl: UploadLimits['review'],
    runnerNamespace: string,
    sessionNamespace: string,
    now: () => number = Date.now,
    podOf: SessionPod = () => undefined,
  ) {
    this.runnerNamespace = runnerNamespace;
    this.podOf = podOf;
    this.sessionNamespace = sessionNamespace;
    this.answers = new LRUCache({
      max: ttl.maxEntries,
      ttl: ttl.okTtlMs,
      ttlResolution: 0,
      perf: { now },
      // an answer evicted while its review is under way still answers the checks waiting for it
      ignoreFetchAbort: true,
      fetchMethod: async (_key, _stale, { options, context: token }) => {
        this.reviews++;
        const answer = (await review(token)) ?? false;
        options.ttl = answer ? ttl.okTtlMs : ttl.failureTtlMs;
        return answer;
      },
    });
  }

  private async reviewed(token: string): Promise<Reviewed | undefined> {
    const key = createHash('sha256').update(token).digest('base64url');
    return (await this.answers.fetch(key, { context: token })) || undefined;
  }

  async mayUpload(token: string, namespace: string, session: string): Promise<boolean> {
    if (!token || namespace !== this.sessionNamespace) return false;
    const reviewed = await this.reviewed(token);
    return Boolean(
      reviewed?.user.startsWith(`system:serviceaccount:${this.runnerNamespace}:${RUNNER_IDENTITY_PREFIX}`) &&
      reviewed.pod === (this.podOf(namespace, session) ?? runnerName(session)),
    );
  }
}
