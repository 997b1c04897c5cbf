// Who may upload media for a Session: its runner, proven by a projected ServiceAccount token
// (audience tether-relay) checked with a TokenReview.
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { RELAY_TOKEN_AUDIENCE, runnerName } from '../../common/session/names.ts';

export interface UploadAuthorizer {
  /** true when the bearer token belongs to the runner of namespace/session. */
  mayUpload(token: string, namespace: string, session: string): Promise<boolean>;
}

const CACHE_MS = 60_000;

export class TokenReviewAuthorizer implements UploadAuthorizer {
  private readonly api: AuthenticationV1Api;
  private readonly cache = new Map<string, { user: string; until: number }>();

  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(AuthenticationV1Api);
  }

  private async userOf(token: string): Promise<string | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit.user;
    const review = await this.api.createTokenReview({ body: { spec: { token, audiences: [RELAY_TOKEN_AUDIENCE] } } });
    const status = review.status;
    if (!status?.authenticated || !status.audiences?.includes(RELAY_TOKEN_AUDIENCE) || !status.user?.username) return undefined;
    if (this.cache.size > 1000) this.cache.clear();
    this.cache.set(key, { user: status.user.username, until: Date.now() + CACHE_MS });
    return status.user.username;
  }

  async mayUpload(token: string, namespace: string, session: string): Promise<boolean> {
    if (!token) return false;
    return (await this.userOf(token)) === `system:serviceaccount:${namespace}:${runnerName(session)}`;
  }
}
