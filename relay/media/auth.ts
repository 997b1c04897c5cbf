// Who may upload media for a Session: its runner, proven by a projected ServiceAccount token
// (audience tether-relay) checked with a TokenReview: a runner ServiceAccount of the runner
// namespace, the token bound to the Session's runner Pod (the API server's pod-name claim).
import { createHash } from 'node:crypto';
import { AuthenticationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { RELAY_TOKEN_AUDIENCE, RUNNER_IDENTITY_PREFIX, runnerName } from '../../common/session/names.ts';

export interface UploadAuthorizer {
  /** true when the bearer token belongs to the runner of namespace/session. */
  mayUpload(token: string, namespace: string, session: string): Promise<boolean>;
}

const CACHE_MS = 60_000;
const POD_NAME_CLAIM = 'authentication.kubernetes.io/pod-name';

interface Reviewed { user: string; pod?: string }

export class TokenReviewAuthorizer implements UploadAuthorizer {
  private readonly api: AuthenticationV1Api;
  private readonly cache = new Map<string, Reviewed & { until: number }>();
  private readonly runnerNamespace: string;

  /** runnerNamespace: where runner Pods and their ServiceAccounts live. */
  constructor(kubeConfig: KubeConfig, runnerNamespace: string) {
    this.api = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.runnerNamespace = runnerNamespace;
  }

  private async review(token: string): Promise<Reviewed | undefined> {
    const key = createHash('sha256').update(token).digest('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > Date.now()) return hit;
    const review = await this.api.createTokenReview({ body: { spec: { token, audiences: [RELAY_TOKEN_AUDIENCE] } } });
    const status = review.status;
    if (!status?.authenticated || !status.audiences?.includes(RELAY_TOKEN_AUDIENCE) || !status.user?.username) return undefined;
    if (this.cache.size > 1000) this.cache.clear();
    const reviewed = { user: status.user.username, pod: status.user.extra?.[POD_NAME_CLAIM]?.[0], until: Date.now() + CACHE_MS };
    this.cache.set(key, reviewed);
    return reviewed;
  }

  async mayUpload(token: string, _namespace: string, session: string): Promise<boolean> {
    if (!token) return false;
    const reviewed = await this.review(token);
    return Boolean(reviewed?.user.startsWith(`system:serviceaccount:${this.runnerNamespace}:${RUNNER_IDENTITY_PREFIX}`) && reviewed.pod === runnerName(session));
  }
}
