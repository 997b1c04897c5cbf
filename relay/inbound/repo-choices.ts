// Each phone's default repository (`repo web`), kept in one ConfigMap so a relay restart or the
// other replica sees it: key the phone hash, value the repository's short name. The chart creates
// the ConfigMap; the relay only reads and replaces it by name.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource, type Resource } from '../../common/kube/resources.ts';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { FIELD_MANAGERS } from '../../common/kube/sessions.ts';
import { phoneHash } from '../../common/session/display.ts';
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
  private readonly o: { name: string; namespace: string };

  constructor(kube: KubeConnection, options: { name: string; namespace: string }) {
    this.configMaps = resource<V1ConfigMap>(kube, KINDS.configMaps, FIELD_MANAGERS.relay);
    this.o = options;
  }

  async get(phone: string): Promise<string | undefined> {
    return (await this.read()).data?.[phoneHash(phone)];
  }

  async set(phone: string, name: string): Promise<void> {
    const key = phoneHash(phone);
    await retryOnConflict(
      () => this.read(),
      (current) =>
        current.data?.[key] === name ? done(undefined) : { ...current, data: { ...current.data, [key]: name } },
      async (next) => {
        await this.configMaps.replace(next);
      },
    );
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.configMaps, this.o.namespace, this.o.name, REPO_CHOICES_COMPONENT);
  }
}
