// Idempotency of inbound messages that do not create a Session (keywords, answers, cancel): one
// ConfigMap, shared by the relay replicas, maps each such message to when and by whom it was
// taken. Entries are kept as long as an approval can be open (the approval timeout), so a
// replayed "approve" is refused while the request it answered could still be waiting. New commands
// need no entry: their Session's name is derived from the message id (names.ts).
import { createHash } from 'node:crypto';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource, type Resource } from '../../common/kube/resources.ts';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { FIELD_MANAGERS } from '../../common/kube/sessions.ts';
import { readOwnConfigMap } from './own-configmap.ts';

export const CLAIM_COMPONENT = 'message-claims';
/** Entries beyond this many are dropped oldest first, keeping the object far below 1 MiB. */
export const MAX_CLAIMS = 8000;

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
  /** the clock, epoch ms (default Date.now) */
  now?: () => number;
}

export class ConfigMapClaims implements MessageClaims {
  private readonly configMaps: Resource<V1ConfigMap>;
  private readonly o: ConfigMapClaimsOptions;
  private readonly now: () => number;
  /** the object as this replica last wrote it: the first read of the next claim */
  private last: V1ConfigMap | undefined;

  constructor(kube: KubeConnection, options: ConfigMapClaimsOptions) {
    this.configMaps = resource<V1ConfigMap>(kube, KINDS.configMaps, FIELD_MANAGERS.relay);
    this.o = options;
    this.now = options.now ?? Date.now;
  }

  async claim(messageId: string): Promise<boolean> {
    const key = claimKey(messageId);
    try {
      return await retryOnConflict(
        async (round) => (round === 0 && this.last) || (await this.read()),
        (current) => {
          const taken = current.data?.[key];
          if (taken !== undefined) return done(taken.split(' ')[1] === this.o.owner);
          return { ...current, data: this.withEntry(current.data ?? {}, key) };
        },
        async (next) => {
          this.last = await this.configMaps.replace(next);
          return true;
        },
      );
    } catch (error) {
      this.last = undefined;
      throw error;
    }
  }

  private withEntry(data: Record<string, string>, key: string): Record<string, string> {
    const now = this.now();
    const kept = Object.entries(data)
      .filter(([, value]) => now - Number(value.split(' ')[0]) < this.o.retentionMs)
      .sort(([, a], [, b]) => Number(a.split(' ')[0]) - Number(b.split(' ')[0]))
      .slice(-(MAX_CLAIMS - 1));
    return { ...Object.fromEntries(kept), [key]: `${now} ${this.o.owner}` };
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.configMaps, this.o.namespace, this.o.name, CLAIM_COMPONENT);
  }
}
