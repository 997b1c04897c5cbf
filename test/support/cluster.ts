// Per-test access to the run's shared control plane: clients and a fresh namespace.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CoreV1Api, KubeConfig, loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { SessionClient } from '../../common/kube/sessions.ts';
import { isAlreadyExists } from '../../common/kube/errors.ts';
import { CRD_PATH } from '../../common/session/crd-yaml.ts';

const run = promisify(execFile);

export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(inject('kubeconfig'));
  return kc;
}

export async function createNamespace(kc: KubeConfig, prefix = 't'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

export async function deleteNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc.makeApiClient(CoreV1Api).deleteNamespace({ name }).catch(() => undefined);
}

/** Creates or replaces the Session CRD from crds/ and waits until it is Established. */
export async function installSessionCrd(kc: KubeConfig, timeoutMs = 30_000): Promise<V1CustomResourceDefinition> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const body = loadYaml<V1CustomResourceDefinition>(readFileSync(CRD_PATH, 'utf8'));
  try {
    await api.createCustomResourceDefinition({ body });
  } catch (error) {
    if (!isAlreadyExists(error)) throw error;
    const current = await api.readCustomResourceDefinition({ name: body.metadata!.name! });
    await api.replaceCustomResourceDefinition({ name: body.metadata!.name!, body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } } });
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const crd = await api.readCustomResourceDefinition({ name: body.metadata!.name! });
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return crd;
    if (Date.now() > deadline) throw new Error('Session CRD not Established in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function sessionClient(kc: KubeConfig): SessionClient {
  return new SessionClient(kc);
}

/** Runs the control plane's own kubectl against the test apiserver. */
export async function kubectl(args: string[], kubeconfig = inject('kubeconfig')): Promise<string> {
  const { stdout } = await run(join(inject('binDir'), 'kubectl'), ['--kubeconfig', kubeconfig, ...args]);
  return stdout;
}
