// A ConfigMap the relay keeps its own records in, by name: the chart creates it (the relay may
// only get and update it); a relay with wider rights, as in tests, creates it when missing.
import type { CoreV1Api, V1ConfigMap } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '../../common/kube/errors.ts';
import { LABEL_COMPONENT, LABEL_PART_OF } from '../../common/session/names.ts';

export async function readOwnConfigMap(
  api: CoreV1Api,
  namespace: string,
  name: string,
  component: string,
): Promise<V1ConfigMap> {
  try {
    return await api.readNamespacedConfigMap({ namespace, name });
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const body = { metadata: { name, labels: { [LABEL_COMPONENT]: component, [LABEL_PART_OF]: 'tether' } }, data: {} };
  return api.createNamespacedConfigMap({ namespace, body }).catch(async (error: unknown) => {
    if (!isConflict(error)) throw error; // AlreadyExists: another replica created it first
    return api.readNamespacedConfigMap({ namespace, name });
  });
}
