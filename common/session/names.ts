// Deterministic names and labels derived from a phone number.
import { createHash, randomBytes } from 'node:crypto';
import { DNS_LABEL_PATTERN } from './patterns.ts';

export const LABEL_PHONE_HASH = 'tether.dev/phone-hash';
export const LABEL_SESSION = 'tether.dev/session';
export const LABEL_COMPONENT = 'app.kubernetes.io/component';
export const LABEL_PART_OF = 'app.kubernetes.io/part-of';
export const ANNOTATION_DELIVERED = 'tether.dev/delivered';
/** The relay journal that took the command a Session was created for. */
export const ANNOTATION_ACCEPTED_BY = 'tether.dev/accepted-by';
export const RELAY_TOKEN_AUDIENCE = 'tether-relay';
/** Runners upload media here, over the in-cluster Service; the Ingress does not route it. */
export const RELAY_UPLOAD_PATH = '/uploads';
/** Where the runner keeps its private git store: a Pod-local volume the agent's workspace does not contain. */
export const RUNNER_GIT_STORE = '/var/lib/tether/git';
/**
 * The supervisor's own HOME and working folder, inside its private volume: tools it runs (Chromium,
 * client-node, git) read configuration from HOME that can name code to load, so it is never a folder
 * the agent can write. The agent's HOME is on the workspace (TETHER_AGENT_HOME).
 */
export const RUNNER_HOME = `${RUNNER_GIT_STORE}/home`;

/** The Session's repository, by the short name the install gives it (kubectl -l, status). */
export const LABEL_REPO = 'tether.dev/repo';

/** A repository's short name: a DNS label short enough that ws-<phonehash>-<name> is one too (≤ 63). */
export const REPO_NAME_PATTERN = DNS_LABEL_PATTERN;
export const REPO_NAME_MAX_LENGTH = 40;

/**
 * The per-phone workspace PVC of the phone with this hash: ws-<phonehash> for the install's default
 * repository (the name every workspace had before installs listed several), ws-<phonehash>-<repo
 * name> for each other one.
 */
export function workspaceName(phoneHash: string, otherRepo?: string): string {
  return otherRepo ? `ws-${phoneHash}-${otherRepo}` : `ws-${phoneHash}`;
}

/**
 * The repository part of one of the workspaces of the phone with this hash: '' for the default
 * repository's, the repository's name for another's; undefined when the name is not one of them.
 */
export function workspaceRepoOf(phoneHash: string, workspace: string): string | undefined {
  const own = workspaceName(phoneHash);
  if (workspace === own) return '';
  const rest = workspace.startsWith(`${own}-`) ? workspace.slice(own.length + 1) : undefined;
  return rest !== undefined && new RegExp(REPO_NAME_PATTERN).test(rest) ? rest : undefined;
}

const stamp = (at: Date) => at.toISOString().replace(/[-:T]/g, '').slice(0, 14);

/** <phonehash>-<yyyymmddhhmmss>-<rand>, e.g. 3f2a…-20261122083000-k3x9. */
export function sessionName(
  phoneHash: string,
  at = new Date(),
  rand = randomBytes(3).toString('hex').slice(0, 4),
): string {
  return `${phoneHash}-${stamp(at)}-${rand}`;
}

/**
 * The Session of one inbound command: <phonehash>-<16 hex>-<4 hex> of sha256(message id), the last
 * part the short id the phone sees. Every copy
 * of the message (a Twilio retry, the other replica, a replay from the journal) names the same
 * Session, so the create is the message's idempotency record: a second one is AlreadyExists.
 */
export function commandSessionName(phoneHash: string, messageId: string): string {
  const hash = createHash('sha256').update(messageId).digest('hex');
  return `${phoneHash}-${hash.slice(0, 16)}-${hash.slice(16, 20)}`;
}

/** A Session's runner Pod: the one made for it; `replacement` counts the Pods made after one was lost. */
export function runnerName(session: string, replacement = 0): string {
  return replacement > 0 ? `${session}-runner-${replacement}` : `${session}-runner`;
}

/** On a runner Pod: the workspace claim it mounts (a live Pod is reused only for the same one). */
export const LABEL_WORKSPACE = 'tether.dev/workspace';
/**
 * On a runner Pod: a digest of everything in it that is not one Session's (image, repository URL, the
 * install's runner settings); a live Pod is reused only while it equals the one a new Pod would get.
 */
export const ANNOTATION_RUNNER_KEY = 'tether.dev/runner-key';

/** The ServiceAccount, Role and RoleBinding every runner of one phone runs as: runner-<phonehash>. */
export function runnerIdentityName(phoneHash: string): string {
  return `${RUNNER_IDENTITY_PREFIX}${phoneHash}`;
}
export const RUNNER_IDENTITY_PREFIX = 'runner-';
/** On a runner Pod: the uid of the Session it runs (the Session may live in another namespace). */
export const ANNOTATION_SESSION_UID = 'tether.dev/session-uid';

/** Where both containers of a runner Pod mount the emptyDir that carries the agent channel. */
export const AGENT_SOCKET_DIR = '/run/tether';
/** The agent channel's Unix socket: in a folder of the supervisor's own on that emptyDir. */
export const AGENT_SOCKET_PATH = `${AGENT_SOCKET_DIR}/supervisor/agent.sock`;
