// The supervisor's git store of one workspace: a claim of its own beside the workspace claim, kept like it, so a
// repository's history is fetched once per workspace rather than once per runner Pod. Only the runner container
// mounts it (builders.ts): the agent never sees the store its changes are snapshotted into.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { LABEL_COMPONENT, LABEL_WORKSPACE } from '../common/session/names.ts';
import type { Session } from '../common/session/schema.ts';
import { desiredPvc } from './workspace-claim.ts';
import type { ControllerConfig } from './config.ts';

/**
 * `<claim>.git`: a workspace claim is a DNS label (no dot), so no workspace of any repository (a repository named
 * "git" has the workspace `ws-<hash>-git`) can ever be the store of another, nor a store a workspace.
 */
export const storeClaimName = (claim: string): string => `${claim}.git`;

/**
 * The store claim of the workspace `claim`, sized and classed as workspaces are: never owned by a Session, it
 * outlives them all, as the workspace does.
 */
export function desiredStorePvc(
  session: Session,
  config: Pick<ControllerConfig, 'pvc' | 'runnerNamespace' | 'phoneHash'>,
  claim: string,
): V1PersistentVolumeClaim {
  const workspace = desiredPvc(session, config, claim);
  const labels = { ...workspace.metadata!.labels, [LABEL_WORKSPACE]: claim, [LABEL_COMPONENT]: 'git-store' };
  return { ...workspace, metadata: { ...workspace.metadata, name: storeClaimName(claim), labels } };
}
