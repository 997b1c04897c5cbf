// Per-test access to the run's shared control plane: clients and a fresh namespace.
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { isAlreadyExists } from '../../common/kube/errors.ts';
import { SessionClient } from '../../common/kube/sessions.ts';
import { RELAY_TOKEN_AUDIENCE, runnerIdentityName, runnerName } from '../../common/session/names.ts';
import { installSessionCrd } from '../../local/control-plane/crd.ts';
import { testPhoneHash } from './phone-hash.ts';

export { installSessionCrd };

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
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name })
    .catch(() => undefined);
}

/** The usual start of an integration suite: admin clients, the Session CRD installed, a fresh namespace. */
export async function sessionNamespace(
  prefix: string,
): Promise<{ kc: KubeConfig; ns: string; sessions: SessionClient }> {
  const kc = adminKubeConfig();
  await installSessionCrd(kc);
  return { kc, ns: await createNamespace(kc, prefix), sessions: sessionClient(kc) };
}

export function sessionClient(kc: KubeConfig): SessionClient {
  return new SessionClient(connectionFromKubeConfig(kc));
}

/** Runs the control plane's own kubectl against the test apiserver. */
export async function kubectl(args: string[], kubeconfig = inject('kubeconfig')): Promise<string> {
  const { stdout } = await run(join(inject('binDir'), 'kubectl'), ['--kubeconfig', kubeconfig, ...args]);
  return stdout;
}

/**
 * A runner's relay token as the kubelet projects it: a token of a phone's runner ServiceAccount
 * bound to the Session's runner Pod (a stand-in Pod that complies with Pod Security `restricted`).
 */
export async function runnerRelayToken(
  kc: KubeConfig,
  namespace: string,
  session: string,
  phone = '+14155550000',
  audience = RELAY_TOKEN_AUDIENCE,
): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const account = runnerIdentityName(testPhoneHash(phone));
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } })
    .catch((e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
    });
  const pod = await core
    .createNamespacedPod({
      namespace,
      body: {
        metadata: { name: runnerName(session) },
        spec: {
          serviceAccountName: account,
          automountServiceAccountToken: false,
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'runner',
              image: 'tether-runner:test',
              securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
            },
          ],
        },
      },
    })
    .catch(async (e: unknown) => {
      if (!isAlreadyExists(e)) throw e;
      return core.readNamespacedPod({ namespace, name: runnerName(session) });
    });
  const request = await core.createNamespacedServiceAccountToken({
    namespace,
    name: account,
    body: {
      spec: {
        audiences: [audience],
        expirationSeconds: 600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! },
      },
    },
  });
  return request.status!.token!;
}
