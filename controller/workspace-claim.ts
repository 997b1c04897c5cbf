// Which claim a Session's workspace is. Normally the PVC its spec names under the phone's keyed
// hash; for a phone whose workspace an earlier version made (named by the unkeyed hash), that
// claim while it exists: a PVC cannot be renamed, and the phone's files and Claude Code
// conversation are on it (docs/security.md, "Phone hashes").
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import {
  LABEL_COMPONENT,
  LABEL_PART_OF,
  LABEL_PHONE_HASH,
  workspaceName,
  workspaceRepoOf,
} from '../common/session/names.ts';
import { legacyPhoneHash, type PhoneHash } from '../common/session/phone-hash.ts';
import type { Session } from '../common/session/schema.ts';
import type { ControllerConfig } from './config.ts';
import type { ReconcileDeps } from './reconcile-deps.ts';

/** The phone's hash under the install's key, and the one earlier versions named its objects by. */
export function phoneHashes(phone: string, phoneHash: PhoneHash): { keyed: string; legacy: string } {
  return { keyed: phoneHash(phone), legacy: legacyPhoneHash(phone) };
}

/** The repository part of spec.workspace under either of the phone's hashes; undefined: not the phone's. */
export function workspaceRepo(session: Session, phoneHash: PhoneHash): string | undefined {
  return repoUnder(phoneHashes(session.spec.phone, phoneHash), session.spec.workspace);
}

const repoUnder = ({ keyed, legacy }: { keyed: string; legacy: string }, workspace: string) =>
  workspaceRepoOf(keyed, workspace) ?? workspaceRepoOf(legacy, workspace);

/**
 * The claim the Session's runner mounts: the keyed name when that PVC exists or neither does (it
 * is made under that name), the legacy name while only that one exists. A legacy name is never
 * made again. A workspace that is not the phone's stays as given: the spec check refuses it.
 */
export function workspaceClaim(
  session: Session,
  phoneHash: PhoneHash,
  cached: (name: string) => V1PersistentVolumeClaim | undefined,
): string {
  const { keyed, legacy } = phoneHashes(session.spec.phone, phoneHash);
  const repo = repoUnder({ keyed, legacy }, session.spec.workspace);
  if (repo === undefined) return session.spec.workspace;
  const name = workspaceName(keyed, repo || undefined);
  const before = workspaceName(legacy, repo || undefined);
  return cached(name) || !cached(before) ? name : before;
}

/** The Session's claim as the controller's caches show the runner namespace. */
export const cachedClaim = (session: Session, deps: Pick<ReconcileDeps, 'cache' | 'config'>): string =>
  workspaceClaim(session, deps.config.phoneHash, (name) => deps.cache.pvc(deps.config.runnerNamespace, name));

/** The per-phone workspace, named `claim` (workspace-claim.ts): never owned by a Session, it outlives them all. */
export function desiredPvc(
  session: Session,
  config: Pick<ControllerConfig, 'pvc' | 'runnerNamespace' | 'phoneHash'>,
  claim = session.spec.workspace,
): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: claim,
      namespace: config.runnerNamespace,
      labels: {
        [LABEL_PHONE_HASH]: config.phoneHash(session.spec.phone),
        [LABEL_COMPONENT]: 'workspace',
        [LABEL_PART_OF]: 'tether',
      },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: config.pvc.size } },
      ...(config.pvc.storageClass ? { storageClassName: config.pvc.storageClass } : {}),
    },
  };
}
