// The runner Pod's volumes (builders.ts).
import type { V1Volume } from '@kubernetes/client-node';
import { RELAY_TOKEN_AUDIENCE } from '../common/session/names.ts';
import type { ControllerConfig } from './config.ts';
import { egressVolumes } from './runner-egress.ts';
import { runnerTokenSecretName } from './runner-token.ts';
import { storeClaimName } from './store-claim.ts';

/**
 * The workspace claim, the supervisor's private git store (the workspace's store claim, store-claim.ts) and its HOME
 * (the Pod's own), the channel's socket folder, the projected tokens (API server; relay upload), with a GitHub App
 * the Pod's GitHub token Secret and with the egress proxy its credential's Secret (runner-egress.ts). The workspace
 * stays the first claim (the local node's ids follow it).
 */
export function runnerVolumes(
  config: Pick<ControllerConfig, 'githubApp' | 'tokenExpirationSeconds' | 'egress'>,
  claim: string,
  podName: string,
): V1Volume[] {
  // The Pod's own Secrets (runner-token.ts, runner-egress.ts), written right after the Pod: it waits for them to start.
  const token: V1Volume[] = config.githubApp
    ? [{ name: 'github-token', secret: { secretName: runnerTokenSecretName(podName), defaultMode: 0o440 } }]
    : [];
  return [
    ...token,
    ...egressVolumes(config.egress, podName),
    { name: 'workspace', persistentVolumeClaim: { claimName: claim } },
    { name: 'git-store', persistentVolumeClaim: { claimName: storeClaimName(claim) } },
    { name: 'runner-home', emptyDir: {} },
    { name: 'agent-socket', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    { name: 'agent-tmp', emptyDir: {} },
    {
      name: 'kube-api-access',
      projected: {
        defaultMode: 0o444,
        sources: [
          { serviceAccountToken: { path: 'token', expirationSeconds: config.tokenExpirationSeconds } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    },
    {
      name: 'relay-token',
      projected: {
        defaultMode: 0o444,
        sources: [
          {
            serviceAccountToken: {
              audience: RELAY_TOKEN_AUDIENCE,
              path: 'token',
              expirationSeconds: config.tokenExpirationSeconds,
            },
          },
        ],
      },
    },
  ];
}
