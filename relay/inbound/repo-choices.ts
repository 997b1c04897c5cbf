// Each phone's default repository (`repo web`), kept in one ConfigMap so a relay restart or the
// other replica sees it: key the phone hash, value the repository's short name. The chart creates
// the ConfigMap; the relay only reads and replaces it by name.
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { readOwnConfigMap } from './own-configmap.ts';
import { isConflict } from '../../common/kube/errors.ts';
import { phoneHash } from '../../common/session/display.ts';

export const REPO_CHOICES_COMPONENT = 'repo-choices';
const MAX_CONFLICTS = 20;

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
  private readonly api: CoreV1Api;
  private readonly o: { name: string; namespace: string };

  constructor(kubeConfig: KubeConfig, options: { name: string; namespace: string }) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
    this.o = options;
  }

  async get(phone: string): Promise<string | undefined> {
    return (await this.read()).data?.[phoneHash(phone)];
  }

  async set(phone: string, name: string): Promise<void> {
    for (let attempt = 0; attempt < MAX_CONFLICTS; attempt++) {
      const current = await this.read();
      if (current.data?.[phoneHash(phone)] === name) return;
      try {
        await this.api.replaceNamespacedConfigMap({
          namespace: this.o.namespace,
          name: this.o.name,
          body: { ...current, data: { ...current.data, [phoneHash(phone)]: name } },
        });
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
    throw new Error(`repository choices kept conflicting after ${MAX_CONFLICTS} attempts`);
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.api, this.o.namespace, this.o.name, REPO_CHOICES_COMPONENT);
  }
}
