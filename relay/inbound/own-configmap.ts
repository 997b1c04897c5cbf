// A ConfigMap the relay keeps its own records in, by name: the chart creates it (the relay may
// only get and update it); a relay with wider rights, as in tests, creates it when missing.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Resource } from '../../common/kube/resources.ts';
import { LABEL_COMPONENT, LABEL_PART_OF } from '../../common/session/names.ts';

export async function readOwnConfigMap(
  configMaps: Resource<V1ConfigMap>,
  namespace: string,
  name: string,
  component: string,
): Promise<V1ConfigMap> {
  const existing = await configMaps.get(namespace, name);
  if (existing) return existing;
  // createOrGet: another replica may create it first
  return configMaps.createOrGet({
    metadata: { name, namespace, labels: { [LABEL_COMPONENT]: component, [LABEL_PART_OF]: 'tether' } },
    data: {},
  });
}
