// A Secret of one runner Pod's own (its GitHub token, its egress credential): named after the Pod,
// labelled as that kind, owned by the Pod (the garbage collector removes it with the Pod), one key.
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { LABEL_COMPONENT, LABEL_PART_OF, LABEL_SESSION } from '../common/session/names.ts';

export interface PodSecretContent {
  name: string;
  component: string;
  data: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The Secret with `content` (values as text), owned by the Pod. */
export function podOwnedSecret(pod: V1Pod, content: PodSecretContent): V1Secret {
  const { name, namespace, uid } = pod.metadata as { name: string; namespace: string; uid: string };
  const labels = pod.metadata?.labels;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: content.name,
      namespace,
      labels: {
        [LABEL_COMPONENT]: content.component,
        [LABEL_PART_OF]: 'tether',
        ...(labels?.[LABEL_SESSION] ? { [LABEL_SESSION]: labels[LABEL_SESSION] } : {}),
      },
      ...(content.annotations ? { annotations: content.annotations } : {}),
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name, uid }],
    },
    type: 'Opaque',
    data: Object.fromEntries(
      Object.entries(content.data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
  };
}
