// The pull requests Tether opened for phones (types.ts), kept in one ConfigMap the chart creates:
// one data key per pull request, `<owner>.<repo>.<number>` → the JSON PullRecord. The relay
// replicas read it and replace it with the read's resourceVersion (a conflict reads again). Every
// write keeps the budgets (budget.ts): a record's size, a phone's open records, the ConfigMap's size.
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeConnection } from '../../common/kube/connection.ts';
import { KINDS, resource, type Resource } from '../../common/kube/resources.ts';
import { done, retryOnConflict } from '../../common/kube/retry.ts';
import { FIELD_MANAGERS } from '../../common/kube/sessions.ts';
import { readOwnConfigMap } from '../inbound/own-configmap.ts';
import { boundedRecord, PULL_OPEN_PER_PHONE } from './budget.ts';
import { NOTICE_ID, pullKey, pullKeyHash } from './keys.ts';
import type { PullRecord, PullRecords } from './types.ts';

export const PULL_RECORDS_COMPONENT = 'pull-requests';
/**
 * The records' JSON in all, kept well below a ConfigMap's 1 MiB: past it, merged and closed
 * records go first, then open ones, the least recently chosen first (fitted()).
 */
export const PULL_RECORDS_MAX_BYTES = 768 * 1024;

/** A record's change (types.ts PullRecords.update): undefined deletes it. */
type Change = (current: PullRecord | undefined) => PullRecord | undefined;
type Data = Record<string, string>;

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

/** Unit tests, and a relay whose records need not outlive it: the same JSON, budgets and all. */
export class MemoryPullRecords extends RecordQueries {
  private data: Data = {};

  protected async records() {
    return recordsOf({ data: this.data });
  }

  async update(owner: string, repo: string, number: number, change: Change) {
    const { data, next } = written(this.data, pullKey(owner, repo, number), change);
    if (data) this.data = data;
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
        const { data, next } = written(configMap.data ?? {}, key, change);
        return data ? { configMap: { ...configMap, data }, next } : done(next);
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

/**
 * `key`'s record changed, bounded, and the data fitted around it; `data` absent: nothing to write.
 * `next` is the record as stored (undefined: deleted, or dropped as its phone's least recently chosen).
 */
function written(stored: Data, key: string, change: Change): { data?: Data; next?: PullRecord } {
  const value = stored[key];
  const changed = change(value === undefined ? undefined : parseRecord(value));
  const next = changed && boundedRecord(changed);
  const json = next && JSON.stringify(next);
  if (json === value || (!next && value === undefined)) return { next };
  const { [key]: _old, ...others } = stored;
  if (json === undefined) return { data: others };
  const data = fitted({ ...others, [key]: json }, key);
  if (data[key] !== undefined) return { data, next };
  const unchanged = value === undefined && Object.keys(data).length === Object.keys(others).length;
  return unchanged ? {} : { data };
}

const entryBytes = (key: string, value: string) => key.length + Buffer.byteLength(value);
const leastChosenFirst = ([ka, a]: [string, PullRecord], [kb, b]: [string, PullRecord]) =>
  a.chosenAt.localeCompare(b.chosenAt) || ka.localeCompare(kb);

/** The open records of `written`'s phone beyond PULL_OPEN_PER_PHONE, the least recently chosen (it too). */
function pastPhoneCap(records: Map<string, PullRecord>, written: PullRecord): string[] {
  const open = [...records].filter(([, r]) => r.phone === written.phone && r.state === 'open');
  return open
    .sort(leastChosenFirst)
    .slice(0, Math.max(0, open.length - PULL_OPEN_PER_PHONE))
    .map(([key]) => key);
}

/**
 * The data within the budgets after `keep` was written: its phone's open records past the cap go,
 * then, past PULL_RECORDS_MAX_BYTES, merged and closed records, entries that are not records, and
 * open records, each the least recently chosen first — never `keep`, which a record's bound keeps small.
 */
function fitted(data: Data, keep: string): Data {
  const records = recordsOf({ data });
  const written = records.get(keep);
  const dropped = new Set(written ? pastPhoneCap(records, written) : []);
  let size = Object.entries(data).reduce((n, [k, v]) => n + (dropped.has(k) ? 0 : entryBytes(k, v)), 0);
  const others = [...records].filter(([k]) => k !== keep && !dropped.has(k)).sort(leastChosenFirst);
  const candidates = [
    ...others.filter(([, r]) => r.state !== 'open').map(([k]) => k),
    ...Object.keys(data).filter((k) => !records.has(k)),
    ...others.filter(([, r]) => r.state === 'open').map(([k]) => k),
  ];
  for (const key of candidates) {
    if (size <= PULL_RECORDS_MAX_BYTES) break;
    size -= entryBytes(key, data[key]!);
    dropped.add(key);
  }
  if (size > PULL_RECORDS_MAX_BYTES) throw new Error(`the pull request records exceed ${PULL_RECORDS_MAX_BYTES} bytes`);
  return Object.fromEntries(Object.entries(data).filter(([k]) => !dropped.has(k)));
}
