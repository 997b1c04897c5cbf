// Idempotency of inbound messages that do not create a Session (keywords, answers, cancel): one
// ConfigMap, shared by the relay replicas, maps each such message to when and by whom it was
// taken. Entries are kept as long as an approval can be open (the approval timeout), so a
// replayed "approve" is refused while the request it answered could still be waiting. New commands
// need no entry: their Session's name is derived from the message id (names.ts).
import { createHash } from 'node:crypto';
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { readOwnConfigMap } from './own-configmap.ts';
import { isConflict } from '../../common/kube/errors.ts';

export const CLAIM_COMPONENT = 'message-claims';
/** Entries beyond this many are dropped oldest first, keeping the object far below 1 MiB. */
export const MAX_CLAIMS = 8000;
const MAX_CONFLICTS = 20;

/** A valid ConfigMap key for any message id, the same in every replica. */
export const claimKey = (messageId: string) => createHash('sha256').update(messageId).digest('hex').slice(0, 32);

export interface MessageClaims {
  /** true: act on the message (first taker, or this journal taking it again after a restart); false: a duplicate. */
  claim(messageId: string): Promise<boolean>;
}

export interface ConfigMapClaimsOptions {
  name: string;
  namespace: string;
  /** this relay's journal identity: a replayed message it took itself is acted on again */
  owner: string;
  retentionMs: number;
}

export class ConfigMapClaims implements MessageClaims {
  private readonly api: CoreV1Api;
  private readonly o: ConfigMapClaimsOptions;
  private last: V1ConfigMap | undefined;

  constructor(kubeConfig: KubeConfig, options: ConfigMapClaimsOptions) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
    this.o = options;
  }

  async claim(messageId: string): Promise<boolean> {
    const key = claimKey(messageId);
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const current = this.last ?? (await this.read());
      const taken = current.data?.[key];
      if (taken !== undefined) return taken.split(' ')[1] === this.o.owner;
      try {
        this.last = await this.api.replaceNamespacedConfigMap({
          namespace: this.o.namespace,
          name: this.o.name,
          body: { ...current, data: this.withEntry(current.data ?? {}, key) },
        });
        return true;
      } catch (error) {
        this.last = undefined;
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error(`message claims kept conflicting after ${MAX_CONFLICTS} attempts`);
  }

  private withEntry(data: Record<string, string>, key: string): Record<string, string> {
    const now = Date.now();
    const kept = Object.entries(data)
      .filter(([, value]) => now - Number(value.split(' ')[0]) < this.o.retentionMs)
      .sort(([, a], [, b]) => Number(a.split(' ')[0]) - Number(b.split(' ')[0]))
      .slice(-(MAX_CLAIMS - 1));
    return { ...Object.fromEntries(kept), [key]: `${now} ${this.o.owner}` };
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.api, this.o.namespace, this.o.name, CLAIM_COMPONENT);
  }
}
