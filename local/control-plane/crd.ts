// Installs the Session CRD from crds/ and waits until the API server serves it.
import { readFileSync } from 'node:fs';
import {
  ApiextensionsV1Api,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { isAlreadyExists } from '../../common/kube/errors.ts';
import { CRD_PATH } from '../../common/session/crd-yaml.ts';

/** Creates or replaces the Session CRD from crds/ and waits until it is Established. */
export async function installSessionCrd(kc: KubeConfig, timeoutMs = 30_000): Promise<V1CustomResourceDefinition> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const body = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_PATH, 'utf8'));
  const name = body.metadata!.name!;
  try {
    await api.createCustomResourceDefinition({ body });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    const current = await api.readCustomResourceDefinition({ name });
    await api.replaceCustomResourceDefinition({
      name,
      body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } },
    });
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const crd = await api.readCustomResourceDefinition({ name });
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return crd;
    if (Date.now() > deadline) throw new Error('Session CRD not Established in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
