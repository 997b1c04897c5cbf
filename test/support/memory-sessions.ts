// An in-memory stand-in for the API server + informer, behind the relay's narrow interfaces
// (SessionStore, SessionWriter, SessionApi). Optimistic concurrency as the API server does it.
import type { Session, SessionSpec, SessionStatus } from '../../common/session/schema.ts';

const conflict = () =>
  Object.assign(new Error('Conflict'), {
    code: 409,
    body: { reason: 'Conflict', message: 'the object has been modified' },
  });
const notFound = () =>
  Object.assign(new Error('NotFound'), { code: 404, body: { reason: 'NotFound', message: 'not found' } });

function merge(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (
      typeof v === 'object' &&
      !Array.isArray(v) &&
      typeof out[k] === 'object' &&
      out[k] !== null &&
      !Array.isArray(out[k])
    ) {
      out[k] = merge(out[k] as Record<string, unknown>, v as Record<string, unknown>);
    } else out[k] = v;
  }
  return out;
}

export class MemorySessions {
  private readonly objects = new Map<string, Session>();
  private readonly handlers: Array<(key: string, s: Session | undefined) => void> = [];
  private version = 1;
  readonly namespace: string;
  patches = 0;

  constructor(namespace = 'ns') {
    this.namespace = namespace;
  }

  private key = (ns: string, name: string) => `${ns}/${name}`;
  private emit(key: string) {
    const s = this.objects.get(key);
    for (const h of this.handlers) h(key, s && structuredClone(s));
  }

  onChange(handler: (key: string, object: Session | undefined) => void): void {
    this.handlers.push(handler);
  }
  async start(): Promise<void> {
    for (const key of this.objects.keys()) this.emit(key);
  }
  stop(): void {}
  get(key: string): Session | undefined;
  get(namespace: string, name: string): Promise<Session | undefined>;
  get(a: string, b?: string): Session | undefined | Promise<Session | undefined> {
    if (b === undefined) return this.objects.get(a) && structuredClone(this.objects.get(a));
    const s = this.objects.get(this.key(a, b));
    return Promise.resolve(s && structuredClone(s));
  }
  list(): Session[] {
    return [...this.objects.values()].map((s) => structuredClone(s));
  }

  async create(
    namespace: string,
    name: string,
    spec: SessionSpec,
    metadata: Partial<Session['metadata']> = {},
  ): Promise<Session> {
    const key = this.key(namespace, name);
    if (this.objects.has(key))
      throw Object.assign(new Error('exists'), { code: 409, body: { reason: 'AlreadyExists' } });
    const session: Session = {
      apiVersion: 'tether.dev/v1alpha1',
      kind: 'Session',
      metadata: {
        ...metadata,
        name,
        namespace,
        resourceVersion: String(this.version++),
        creationTimestamp: new Date().toISOString(),
      },
      spec,
    };
    this.objects.set(key, session);
    this.emit(key);
    return structuredClone(session);
  }

  async patch(
    namespace: string,
    name: string,
    patch: { metadata?: object; spec?: Partial<SessionSpec> },
  ): Promise<Session> {
    this.patches++;
    return this.apply(namespace, name, patch as Record<string, unknown>);
  }

  async patchStatus(
    namespace: string,
    name: string,
    status: Partial<SessionStatus>,
    resourceVersion?: string,
  ): Promise<Session> {
    return this.apply(namespace, name, { ...(resourceVersion ? { metadata: { resourceVersion } } : {}), status });
  }

  private apply(namespace: string, name: string, patch: Record<string, unknown>): Session {
    const key = this.key(namespace, name);
    const current = this.objects.get(key);
    if (!current) throw notFound();
    const rv = (patch.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    if (rv && rv !== current.metadata.resourceVersion) throw conflict();
    const next = merge(current as unknown as Record<string, unknown>, patch) as unknown as Session;
    next.metadata.resourceVersion = String(this.version++);
    this.objects.set(key, next);
    this.emit(key);
    return structuredClone(next);
  }
}
