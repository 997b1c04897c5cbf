// Idempotency of inbound messages, stored in the API server: the first relay replica to create
// the claim object named from the MessageSid handles the message; everyone else gets AlreadyExists.
import { createHash } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, isNotFound } from '../../common/kube/errors.ts';
import { phoneHash } from '../../common/session/display.ts';
import { LABEL_COMPONENT, LABEL_PART_OF, LABEL_PHONE_HASH } from '../../common/session/names.ts';

export const CLAIM_COMPONENT = 'message-claim';
const SELECTOR = `${LABEL_COMPONENT}=${CLAIM_COMPONENT}`;

/** msg-<first 40 hex of sha256(id)>: a valid object name for any MessageSid, the same in every replica. */
export const claimName = (messageId: string) => `msg-${createHash('sha256').update(messageId).digest('hex').slice(0, 40)}`;

export interface MessageClaims {
  /** true for the first caller with this id, false for every later one. */
  claim(messageId: string, phone: string): Promise<boolean>;
}

export class ConfigMapClaims implements MessageClaims {
  private readonly api: CoreV1Api;
  private readonly namespace: string;

  constructor(kubeConfig: KubeConfig, namespace: string) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
    this.namespace = namespace;
  }

  async claim(messageId: string, phone: string): Promise<boolean> {
    try {
      await this.api.createNamespacedConfigMap({
        namespace: this.namespace,
        body: {
          metadata: {
            name: claimName(messageId),
            labels: { [LABEL_COMPONENT]: CLAIM_COMPONENT, [LABEL_PART_OF]: 'tether', [LABEL_PHONE_HASH]: phoneHash(phone) },
          },
          data: { messageId: messageId.slice(0, 128) },
        },
      });
      return true;
    } catch (error) {
      if (isAlreadyExists(error)) return false;
      throw error;
    }
  }

  /** Deletes claims older than maxAgeMs (Twilio retries within minutes; a day is plenty). */
  async prune(maxAgeMs: number): Promise<number> {
    const list = await this.api.listNamespacedConfigMap({ namespace: this.namespace, labelSelector: SELECTOR });
    let deleted = 0;
    for (const cm of list.items) {
      const at = new Date(cm.metadata?.creationTimestamp ?? 0).getTime();
      if (Date.now() - at < maxAgeMs) continue;
      try {
        await this.api.deleteNamespacedConfigMap({ namespace: this.namespace, name: cm.metadata!.name! });
        deleted++;
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return deleted;
  }
}
