// The controller's indexes over its caches: a phone's Sessions (and the phone each hash stands for),
// and a phone's runner Pods by their phone-hash label.
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL_PHONE_HASH } from '../common/session/names.ts';
import type { ControllerConfig } from './config.ts';
import { phoneHashes } from './workspace-claim.ts';

export type PhoneIndex = ReturnType<typeof createPhoneIndex>;

/**
 * Session keys by phone (spec.phone, not the label a malformed Session may lack), and the phone
 * each of its hashes stands for — keyed, or the legacy one on a workspace an earlier version made.
 */
export function createPhoneIndex(config: Pick<ControllerConfig, 'phoneHash'>) {
  const byPhone = new Map<string, Set<string>>();
  const phoneOf = new Map<string, string>();
  const byHash = new Map<string, string>();
  const hashes = (phone: string) => Object.values(phoneHashes(phone, config.phoneHash));
  return {
    add(key: string, phone: string): void {
      phoneOf.set(key, phone);
      if (!byPhone.has(phone)) byPhone.set(phone, new Set());
      byPhone.get(phone)!.add(key);
      for (const hash of hashes(phone)) byHash.set(hash, phone);
    },
    /** Forgets a deleted Session; returns its phone. */
    remove(key: string): string | undefined {
      const phone = phoneOf.get(key);
      phoneOf.delete(key);
      if (phone !== undefined && byPhone.get(phone)?.delete(key) && byPhone.get(phone)!.size === 0) {
        byPhone.delete(phone);
        for (const hash of hashes(phone)) byHash.delete(hash);
      }
      return phone;
    },
    keys: (phone: string) => [...(byPhone.get(phone) ?? [])],
    /** The phone a hash label stands for, while it has Sessions. */
    phoneOf: (hash: string) => byHash.get(hash),
  };
}

/** Runner Pod keys by their phone-hash label. */
export function createPodIndex() {
  const byHash = new Map<string, Set<string>>();
  const hashOf = new Map<string, string>();
  return {
    /** Records the Pod (undefined: gone); returns its phone hash, or the one it had. */
    update(key: string, pod: V1Pod | undefined): string | undefined {
      const before = hashOf.get(key);
      if (before !== undefined) byHash.get(before)?.delete(key);
      if (before !== undefined && byHash.get(before)?.size === 0) byHash.delete(before);
      hashOf.delete(key);
      const hash = pod?.metadata?.labels?.[LABEL_PHONE_HASH];
      if (hash === undefined) return before;
      hashOf.set(key, hash);
      byHash.set(hash, (byHash.get(hash) ?? new Set()).add(key));
      return hash;
    },
    keys: (hash: string) => [...(byHash.get(hash) ?? [])],
  };
}

export type PodIndex = ReturnType<typeof createPodIndex>;
