// Finds the API server and credentials as client-node's loadFromDefault does ($KUBECONFIG, then
// ~/.kube/config, then the Pod's service account), without loading client-node (a second of start-up)
// for the usual cases: server, CA, token or client certificate. Anything else goes through client-node.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import {
  connectionFromKubeConfig,
  loadKubeConfig,
  makeConnection,
  SERVICE_ACCOUNT_DIR,
  type KubeConnection,
  type TlsSettings,
} from './connection.ts';

/** The environment the search reads; only a component's config.ts reads process.env. */
export interface KubeEnvironment {
  KUBECONFIG?: string;
  HOME?: string;
  /** Without KUBECONFIG, the Pod's service account only: no kubeconfig searched under HOME (the runner's). */
  inClusterOnly?: boolean;
  KUBERNETES_SERVICE_HOST?: string;
  KUBERNETES_SERVICE_PORT?: string;
}

type Fields = Record<string, unknown>;
interface KubeconfigFile {
  'current-context'?: string;
  contexts?: Array<{ name: string; context?: { cluster?: string; user?: string } }>;
  clusters?: Array<{ name: string; cluster?: Fields }>;
  users?: Array<{ name: string; user?: Fields }>;
}

const CLUSTER_FIELDS = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
]);
const USER_FIELDS = new Set([
  'token',
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
]);
/** Like client-node's file authenticator: a projected token is re-read at most this often. */
const TOKEN_REREAD_MS = 60_000;

const given = (fields: Fields) => Object.entries(fields).filter(([, v]) => v !== undefined && v !== null && v !== '');
const onlyKnown = (fields: Fields, known: Set<string>) => given(fields).every(([k]) => known.has(k));
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

async function bytes(dir: string, file: unknown, data: unknown): Promise<Buffer | undefined> {
  if (text(file)) return readFile(isAbsolute(file as string) ? (file as string) : join(dir, file as string));
  return text(data) ? Buffer.from(data as string, 'base64') : undefined;
}

function tokenFile(path: string): () => Promise<string> {
  let cached: { token: string; at: number } | undefined;
  return async () => {
    if (!cached || Date.now() - cached.at > TOKEN_REREAD_MS)
      cached = { token: (await readFile(path, 'utf8')).trim(), at: Date.now() };
    return cached.token;
  };
}

/** The current context of a kubeconfig file, or undefined when it needs client-node. */
async function fromFile(file: string): Promise<KubeConnection | undefined> {
  const { parse } = await import('yaml');
  const doc = (parse(await readFile(file, 'utf8')) ?? {}) as KubeconfigFile;
  const context = doc.contexts?.find((c) => c.name === doc['current-context'])?.context;
  const cluster = doc.clusters?.find((c) => c.name === context?.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === context?.user)?.user ?? {};
  const server = text(cluster?.server);
  if (!cluster || !server || !onlyKnown(cluster, CLUSTER_FIELDS) || !onlyKnown(user, USER_FIELDS)) return undefined;
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  if (server.startsWith('http:') && !insecure) return undefined; // client-node refuses it with a clear error
  const dir = dirname(file);
  const tls: TlsSettings = {
    ca: await bytes(dir, cluster['certificate-authority'], cluster['certificate-authority-data']),
    cert: await bytes(dir, user['client-certificate'], user['client-certificate-data']),
    key: await bytes(dir, user['client-key'], user['client-key-data']),
    ...(insecure ? { rejectUnauthorized: false } : {}),
    ...(text(cluster['tls-server-name']) ? { servername: cluster['tls-server-name'] as string } : {}),
  };
  const token = text(user.token);
  return makeConnection(server, tls, token ? async () => token : undefined);
}

async function inCluster(env: KubeEnvironment): Promise<KubeConnection> {
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const host =
    env.KUBERNETES_SERVICE_HOST && isIPv6(env.KUBERNETES_SERVICE_HOST)
      ? `[${env.KUBERNETES_SERVICE_HOST}]`
      : env.KUBERNETES_SERVICE_HOST;
  const scheme = ['80', '8080', '8001'].includes(port) ? 'http' : 'https';
  const ca = await readFile(join(SERVICE_ACCOUNT_DIR, 'ca.crt'));
  return makeConnection(`${scheme}://${host}:${port}`, { ca }, tokenFile(join(SERVICE_ACCOUNT_DIR, 'token')));
}

/** The API server connection from the default places, loading client-node only when it must. */
export async function loadConnection(env: KubeEnvironment): Promise<KubeConnection> {
  const files = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (env.inClusterOnly && files.length === 0) {
    if (!existsSync(join(SERVICE_ACCOUNT_DIR, 'token')))
      throw new Error(`no KUBECONFIG and no service account token at ${SERVICE_ACCOUNT_DIR}`);
    return inCluster(env);
  }
  const home = env.HOME ? join(env.HOME, '.kube', 'config') : undefined;
  const file = files.length > 0 ? files : home && existsSync(home) ? [home] : [];
  let found: KubeConnection | undefined;
  if (file.length === 1) found = await fromFile(file[0]!);
  else if (file.length === 0 && existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) found = await inCluster(env);
  // Several files are merged as client-node does, from the same $KUBECONFIG.
  return found ?? connectionFromKubeConfig(await loadKubeConfig(file.length === 1 ? file[0] : undefined));
}
