// The pull requests Tether opened for phones (types.ts), kept in one ConfigMap the chart creates:
// one data key per pull request, `<owner>.<repo>.<number>` → the JSON PullRecord. The relay
// replicas read it and replace it with the read's resourceVersion (a conflict reads again).
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource, type Resource } from '../../common/kube/resources.ts';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { FIELD_MANAGERS } from '../../common/kube/sessions.ts';
import { readOwnConfigMap } from '../inbound/own-configmap.ts';
import { NOTICE_ID, pullKey, pullKeyHash } from './keys.ts';
import type { PullRecord, PullRecords } from './types.ts';

export const PULL_RECORDS_COMPONENT = 'pull-requests';
/**
 * The records' JSON in all, kept well below a ConfigMap's 1 MiB: past it, merged and closed
 * records go first, the least recently chosen first.
 */
export const PULL_RECORDS_MAX_BYTES = 768 * 1024;

/** A record's change (types.ts PullRecords.update): undefined deletes it. */
type Change = (current: PullRecord | undefined) => PullRecord | undefined;

const newestChosenFirst = (a: PullRecord, b: PullRecord) => b.chosenAt.localeCompare(a.chosenAt);

/** A stored value that is a record (an entry edited by hand into something else is not one). */
function parseRecord(value: string): PullRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  const r = parsed as Partial<PullRecord> | null;
  const fine =
    typeof r?.owner === 'string' &&
    typeof r.repo === 'string' &&
    Number.isInteger(r.number) &&
    typeof r.phone === 'string' &&
    typeof r.repoName === 'string' &&
    typeof r.chosenAt === 'string' &&
    ['open', 'merged', 'closed'].includes(r.state as string) &&
    Array.isArray(r.notices) &&
    Array.isArray(r.seen);
  return fine ? (r as PullRecord) : undefined;
}

/** The queries, over whatever holds the records. */
abstract class RecordQueries implements PullRecords {
  /** key → record, as stored now */
  protected abstract records(): Promise<Map<string, PullRecord>>;

  abstract update(owner: string, repo: string, number: number, change: Change): Promise<PullRecord | undefined>;

  async get(owner: string, repo: string, number: number) {
    return (await this.records()).get(pullKey(owner, repo, number));
  }

  async ofPhone(phone: string) {
    return [...(await this.records()).values()].filter((r) => r.phone === phone).sort(newestChosenFirst);
  }

  async current(phone: string, repoName: string) {
    return (await this.ofPhone(phone)).find((r) => r.repoName === repoName && r.state === 'open');
  }

  async open() {
    return [...(await this.records()).values()].filter((r) => r.state === 'open');
  }

  async byNotice(id: string) {
    const hash = NOTICE_ID.exec(id)?.[1];
    if (!hash) return undefined;
    return [...(await this.records()).values()].find((r) => pullKeyHash(r.owner, r.repo, r.number) === hash);
  }
}

/** Unit tests, and a relay whose records need not outlive it. */
export class MemoryPullRecords extends RecordQueries {
  private readonly stored = new Map<string, PullRecord>();

  protected async records() {
    return new Map([...this.stored].map(([k, r]) => [k, structuredClone(r)]));
  }

  async update(owner: string, repo: string, number: number, change: Change) {
    const key = pullKey(owner, repo, number);
    const before = this.stored.get(key);
    const next = change(before && structuredClone(before));
    if (next) this.stored.set(key, structuredClone(next));
    else this.stored.delete(key);
    return next;
  }
}

export interface ConfigMapPullRecordsOptions {
  /** the chart's `<release>-pull-requests` (TETHER_PULL_REQUESTS_CONFIGMAP) */
  name: string;
  namespace: string;
}

export class ConfigMapPullRecords extends RecordQueries {
  private readonly configMaps: Resource<V1ConfigMap>;
  private readonly o: ConfigMapPullRecordsOptions;

  constructor(kube: KubeConnection, options: ConfigMapPullRecordsOptions) {
    super();
    this.configMaps = resource<V1ConfigMap>(kube, KINDS.configMaps, FIELD_MANAGERS.relay);
    this.o = options;
  }

  protected async records() {
    return recordsOf(await this.read());
  }

  async update(owner: string, repo: string, number: number, change: Change) {
    const key = pullKey(owner, repo, number);
    return retryOnConflict(
      () => this.read(),
      (configMap) => {
        const stored = configMap.data?.[key];
        const before = stored === undefined ? undefined : parseRecord(stored);
        const next = change(before && structuredClone(before));
        const value = next && JSON.stringify(next);
        if (value === stored || (!next && stored === undefined)) return done(next);
        const { [key]: _old, ...others } = configMap.data ?? {};
        const data = value === undefined ? others : { ...others, [key]: value };
        return { configMap: { ...configMap, data: withinSize(data, key) }, next };
      },
      async ({ configMap, next }) => {
        await this.configMaps.replace(configMap);
        return next;
      },
    );
  }

  private read(): Promise<V1ConfigMap> {
    return readOwnConfigMap(this.configMaps, this.o.namespace, this.o.name, PULL_RECORDS_COMPONENT);
  }
}

function recordsOf(configMap: V1ConfigMap): Map<string, PullRecord> {
  const records = new Map<string, PullRecord>();
  for (const [key, value] of Object.entries(configMap.data ?? {})) {
    const record = parseRecord(value);
    if (record) records.set(key, record);
  }
  return records;
}

const entryBytes = (key: string, value: string) => key.length + Buffer.byteLength(value);

/** Drops merged and closed records (never `keep`), least recently chosen first, until the data fits. */
function withinSize(data: Record<string, string>, keep: string): Record<string, string> {
  let size = Object.entries(data).reduce((n, [k, v]) => n + entryBytes(k, v), 0);
  if (size <= PULL_RECORDS_MAX_BYTES) return data;
  const kept = { ...data };
  const finished = [...recordsOf({ data })]
    .filter(([key, r]) => key !== keep && r.state !== 'open')
    .sort(([, a], [, b]) => a.chosenAt.localeCompare(b.chosenAt));
  for (const [key] of finished) {
    if (size <= PULL_RECORDS_MAX_BYTES) break;
    size -= entryBytes(key, kept[key]!);
    delete kept[key];
  }
  if (size > PULL_RECORDS_MAX_BYTES)
    throw new Error(`the open pull requests' records exceed ${PULL_RECORDS_MAX_BYTES} bytes`);
  return kept;
}
