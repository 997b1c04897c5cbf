// "Always for this repository": grants from the phone kept in one ConfigMap (TETHER_EGRESS_GRANTS), key
// = a digest of the repository URL, value = its entries one per line (an operator can read and edit
// them; an edit applies at once, the ConfigMap is watched). Created when missing; bounded in size;
// a write that meets a conflict is tried again from a fresh read.
import { createHash } from 'node:crypto';
import type pino from 'pino';
import { grantEntry, parseHostEntry, type HostEntry } from '../common/egress/hosts.ts';
import type { KubeConnection } from '../common/kube/connection.ts';
import { createInformer, objectKey, type Informer } from '../common/kube/informer.ts';
import { KINDS, resource } from '../common/kube/resources.ts';
import { retryOnConflict } from '../common/kube/retry.ts';

/** A ConfigMap holds at most 1 MiB; the grants keep well below it. */
export const MAX_GRANTS_BYTES = 512 * 1024;

export interface RepositoryGrants {
  entriesFor(repoUrl: string): HostEntry[];
  /** Keeps the entry for the repository (in memory at once; in the ConfigMap when the write succeeds). */
  add(repoUrl: string, entry: HostEntry): Promise<void>;
}

interface ConfigMap {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

/** The ConfigMap key of a repository: ConfigMap keys allow no slash or colon. */
export const grantKey = (repoUrl: string) => `repo-${createHash('sha256').update(repoUrl).digest('hex').slice(0, 40)}`;

const textOf = (entry: HostEntry) =>
  entry.port === undefined ? `${entry.wildcard ? '*.' : ''}${entry.host}` : grantEntry(entry.host, entry.port);

/** The entries of one value; a line that is no entry (an operator's typo) is skipped. */
export function parseGrantLines(value: string | undefined): HostEntry[] {
  return (value ?? '').split('\n').flatMap((line) => {
    if (!line.trim()) return [];
    try {
      return [parseHostEntry(line)];
    } catch {
      return [];
    }
  });
}

/** The value with the entry added last, the oldest dropped past maxEntries. */
export function withEntry(value: string | undefined, entry: HostEntry, maxEntries: number): string {
  const lines = (value ?? '').split('\n').filter((l) => l.trim() && l.trim() !== textOf(entry));
  return [...lines, textOf(entry)].slice(-maxEntries).join('\n');
}

export interface GrantsOptions {
  kube: KubeConnection;
  namespace: string;
  name: string;
  maxEntries: number;
  logger: pino.Logger;
}

export interface GrantsStore extends RepositoryGrants {
  start(): Promise<void>;
  stop(): void;
}

/** The grants ConfigMap, watched; created at start when missing. */
export function configMapGrants(options: GrantsOptions): GrantsStore {
  const configMaps = resource<ConfigMap>(options.kube, KINDS.configMaps, 'tether-egress');
  const informer: Informer<ConfigMap> = createInformer<ConfigMap>({
    kube: options.kube,
    path: configMaps.collectionPath(options.namespace),
    name: options.name,
    logger: options.logger.child({ informer: 'grants' }),
  });
  const key = objectKey({ metadata: { namespace: options.namespace, name: options.name } });
  /** Added here and not yet seen in the watched ConfigMap (kept in memory when a write fails). */
  const pending = new Map<string, HostEntry[]>();

  const write = (repoUrl: string, entry: HostEntry) =>
    retryOnConflict(
      async (attempt) =>
        (attempt === 0 ? informer.get(key) : undefined) ?? (await configMaps.get(options.namespace, options.name)),
      (current) => {
        if (!current) throw new Error(`the grants ConfigMap ${options.name} is gone`);
        const data = {
          ...current.data,
          [grantKey(repoUrl)]: withEntry(current.data?.[grantKey(repoUrl)], entry, options.maxEntries),
        };
        const bytes = Object.entries(data).reduce((sum, [k, v]) => sum + k.length + v.length, 0);
        if (bytes > MAX_GRANTS_BYTES) throw new Error(`the grants ConfigMap would pass ${MAX_GRANTS_BYTES} bytes`);
        return { ...current, data };
      },
      (next) => configMaps.replace(next),
    );

  informer.onChange((_key, configMap) => {
    for (const [repoUrl, entries] of pending) {
      const stored = parseGrantLines(configMap?.data?.[grantKey(repoUrl)]).map(textOf);
      const left = entries.filter((e) => !stored.includes(textOf(e)));
      if (left.length) pending.set(repoUrl, left);
      else pending.delete(repoUrl);
    }
  });

  return {
    async start() {
      // Read first: where the chart made it, the proxy's Role need not allow create.
      if (!(await configMaps.get(options.namespace, options.name)))
        await configMaps.createOrGet({ metadata: { name: options.name, namespace: options.namespace }, data: {} });
      await informer.start();
    },
    stop: () => informer.stop(),
    entriesFor(repoUrl) {
      const stored = parseGrantLines(informer.get(key)?.data?.[grantKey(repoUrl)]);
      return [...stored, ...(pending.get(repoUrl) ?? [])];
    },
    async add(repoUrl, entry) {
      pending.set(repoUrl, [...(pending.get(repoUrl) ?? []), entry]);
      await write(repoUrl, entry);
    },
  };
}
