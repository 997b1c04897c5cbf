// Each phone's default repository (`repo web`), kept in one ConfigMap so a relay restart or the
// other replica sees it: key the keyed phone hash, value the repository's short name. The chart creates
// the ConfigMap; the relay only reads and replaces it by name.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource, type Resource } from '../../common/kube/resources.ts';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { FIELD_MANAGERS } from '../../common/kube/sessions.ts';
import { legacyPhoneHash, type PhoneHash } from '../../common/session/phone-hash.ts';
import { readOwnConfigMap } from './own-configmap.ts';

export const REPO_CHOICES_COMPONENT = 'repo-choices';

export interface RepoChoices {
  get(phone: string): Promise<string | undefined>;
  set(phone: string, name: string): Promise<void>;
}

/** For a relay with one repository, and tests: nothing to remember across restarts. */
export class MemoryRepoChoices implements RepoChoices {
  private readonly chosen = new Map<string, string>();
  async get(phone: string) {
    return this.chosen.get(phone);
  }
  async set(phone: string, name: string) {
    this.chosen.set(phone, name);
  }
}

export class ConfigMapRepoChoices implements RepoChoices {
  private readonly configMaps: Resource<V1ConfigMap>;
  private readonly o: { name: string; namespace: string; phoneHash: PhoneHash };

  constructor(kube: KubeConnection, options: { name: string; namespace: string; phoneHash: PhoneHash }) {
    this.configMaps = resource<V1ConfigMap>(kube, KINDS.configMaps, FIELD_MANAGERS.relay);
    this.o = options;
  }

  /** The phone's choice, under its keyed hash or, made by an earlier version, its legacy one. */
  async get(phone: string): Promise<string | undefined> {
    const data = (await this.read()).data;
    return data?.[this.o.phoneHash(phone)] ?? data?.[legacyPhoneHash(phone)];
  }

  /** Keeps the choice under the keyed hash; an entry under the legacy hash goes. */
  async set(phone: string, name: string): Promise<void> {
    const key = this.o.phoneHash(phone);
    const legacy = legacyPhoneHash(phone);
    await retryOnConflict(
      () => this.read(),
      (current) => {
        if (current.data?.[key] === name && !(legacy in (current.data ?? {}))) return done(undefined);
        const { [legacy]: _gone, ...data } = current.data ?? {};
        return { ...current, data: { ...data, [key]: name } };
      },
      async (next) => {
        await this.configMaps.replace(next);
      },
    );
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.configMaps, this.o.namespace, this.o.name, REPO_CHOICES_COMPONENT);
  }
}
