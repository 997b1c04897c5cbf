// A phone's runner identity: the ServiceAccount its runners run as, and the Role and RoleBinding
// that let them read and write only the phone's Sessions that have a runner. Pure builders.
import type { V1PolicyRule, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import { LABEL_COMPONENT, LABEL_PART_OF, LABEL_PHONE_HASH, runnerIdentityName } from '../common/session/names.ts';
import { GROUP, PLURAL, type Session } from '../common/session/schema.ts';
import type { ControllerConfig } from './config.ts';

/** The component label of a phone's runner ServiceAccount, Role and RoleBinding. */
export const RUNNER_IDENTITY_COMPONENT = 'runner-identity';

export interface RunnerIdentity {
  serviceAccount: V1ServiceAccount;
  role: V1Role;
  roleBinding: V1RoleBinding;
}

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/**
 * The rules of a phone's runner Role (named `role`): read and watch these Sessions, write their
 * status, and read and watch the Role itself (a live runner learns from it the Sessions bound to
 * its Pod); nothing else.
 */
export function runnerRules(sessions: string[], role: string): V1PolicyRule[] {
  const names = [...new Set(sessions)].sort();
  return [
    { apiGroups: [GROUP], resources: [PLURAL], resourceNames: names, verbs: ['get', 'watch'] },
    { apiGroups: [GROUP], resources: [`${PLURAL}/status`], resourceNames: names, verbs: ['get', 'patch', 'update'] },
    { apiGroups: [RBAC_GROUP], resources: ['roles'], resourceNames: [role], verbs: ['get', 'watch'] },
  ];
}

/**
 * A phone's runner identity, made on its first command and kept like its workspace: the
 * ServiceAccount (runner namespace) every runner of the phone runs as, and a Role and RoleBinding
 * beside the Sessions naming only `sessions` — the phone's Sessions that have a runner.
 */
export function desiredIdentity(
  session: Session,
  sessions: string[],
  config: Pick<ControllerConfig, 'runnerNamespace' | 'phoneHash'>,
): RunnerIdentity {
  const hash = config.phoneHash(session.spec.phone);
  const name = runnerIdentityName(hash);
  const labels = { [LABEL_PHONE_HASH]: hash, [LABEL_COMPONENT]: RUNNER_IDENTITY_COMPONENT, [LABEL_PART_OF]: 'tether' };
  const beside = { name, namespace: session.metadata.namespace!, labels };
  return {
    serviceAccount: {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { ...beside, namespace: config.runnerNamespace },
      automountServiceAccountToken: false,
    },
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: beside,
      rules: runnerRules(sessions, name),
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: beside,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: config.runnerNamespace }],
    },
  };
}

/** The Sessions a phone's Role names, from its rules. */
export const grantedSessions = (role: V1Role | undefined): string[] => role?.rules?.[0]?.resourceNames ?? [];
