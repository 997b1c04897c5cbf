// A runner Pod's egress proxy credential (common/egress/credentials.ts): the supervisor's password,
// bound to the Pod's uid, written right after the Pod is made (its uid is known then) to the Pod's
// own Secret `<pod>-egress` that only the runner container mounts. The Pod waits for it to start (the
// kubelet retries the mount). The password never changes for a Pod, so it is written once, never read.
import type { V1EnvVar, V1Pod, V1Secret, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { supervisorPassword } from '../common/egress/credentials.ts';
import type { ControllerConfig } from './config.ts';
import { podOwnedSecret } from './pod-secret.ts';

export const RUNNER_EGRESS_COMPONENT = 'runner-egress';
/** Where the runner container (only) mounts its Secret, and the file it reads at start. */
export const EGRESS_TOKEN_DIR = '/var/run/secrets/tether/egress';
export const EGRESS_TOKEN_KEY = 'token';
const VOLUME = 'egress-token';

export const egressSecretName = (podName: string) => `${podName}-egress`;

/** The Pod's egress Secret: the supervisor's password for this Pod (its name and uid). */
export function desiredEgressSecret(pod: V1Pod, key: string): V1Secret {
  const { name, namespace, uid } = pod.metadata as { name: string; namespace: string; uid: string };
  return podOwnedSecret(pod, {
    name: egressSecretName(name),
    component: RUNNER_EGRESS_COMPONENT,
    data: { [EGRESS_TOKEN_KEY]: supervisorPassword(key, namespace, name, uid) },
  });
}

/** The egress proxy's URL and where the supervisor's credential is: for the runner container only. */
export const egressEnv = (egress: ControllerConfig['egress']): V1EnvVar[] =>
  egress
    ? [
        { name: 'TETHER_EGRESS_URL', value: egress.url },
        { name: 'TETHER_EGRESS_TOKEN_FILE', value: `${EGRESS_TOKEN_DIR}/${EGRESS_TOKEN_KEY}` },
      ]
    : [];

export const egressVolumes = (egress: ControllerConfig['egress'], podName: string): V1Volume[] =>
  egress ? [{ name: VOLUME, secret: { secretName: egressSecretName(podName), defaultMode: 0o440 } }] : [];

export const egressMounts = (egress: ControllerConfig['egress']): V1VolumeMount[] =>
  egress ? [{ name: VOLUME, mountPath: EGRESS_TOKEN_DIR, readOnly: true }] : [];
