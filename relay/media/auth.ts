// Who may upload media for a Session: its runner, proven by a projected ServiceAccount token
// (audience tether-relay) checked with a TokenReview. Answers, good and bad, are remembered
// briefly (bounded), and concurrent checks of one token share a single review.
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { RELAY_TOKEN_AUDIENCE, runnerName } from '../../common/session/names.ts';
import type { UploadLimits } from '../config.ts';
import { ExpiringCache } from './limits.ts';

export interface UploadAuthorizer {
  /** true when the bearer token belongs to the runner of namespace/session. */
  mayUpload(token: string, namespace: string, session: string): Promise<boolean>;
}

/** The user a token authenticates as for the relay's audience, '' when none. */
export type ReviewToken = (token: string) => Promise<string>;

export function tokenReviewer(kubeConfig: KubeConfig): ReviewToken {
  const api = kubeConfig.makeApiClient(AuthenticationV1Api);
  return async (token) => {
    const { status } = await api.createTokenReview({ body: { spec: { token, audiences: [RELAY_TOKEN_AUDIENCE] } } });
    const valid = status?.authenticated && status.audiences?.includes(RELAY_TOKEN_AUDIENCE) && status.user?.username;
    return valid ? status.user!.username! : '';
  };
}

export class CachedTokenAuthorizer implements UploadAuthorizer {
  private readonly review: ReviewToken;
  private readonly ttl: UploadLimits['review'];
  private readonly answers: ExpiringCache<string>;
  private readonly inFlight = new Map<string, Promise<string>>();
  /** TokenReviews sent (a test reads it to see the cache work). */
  reviews = 0;

  constructor(review: ReviewToken, ttl: UploadLimits['review']) {
    this.review = review;
    this.ttl = ttl;
    this.answers = new ExpiringCache(ttl.maxEntries);
  }

  private async userOf(token: string): Promise<string> {
    const key = createHash('sha256').update(token).digest('base64url');
    const known = this.answers.get(key);
    if (known !== undefined) return known;
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const asked = (async () => {
      this.reviews++;
      const user = await this.review(token);
      this.answers.set(key, user, user ? this.ttl.okTtlMs : this.ttl.failureTtlMs);
      return user;
    })().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, asked);
    return asked;
  }

  async mayUpload(token: string, namespace: string, session: string): Promise<boolean> {
    if (!token) return false;
    return (await this.userOf(token)) === `system:serviceaccount:${namespace}:${runnerName(session)}`;
  }
}
