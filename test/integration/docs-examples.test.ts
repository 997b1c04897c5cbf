// The examples in docs/examples/ on the real API server with the Session CRD: kubectl accepts
// every file, and the sample Session keeps every field it shows and is admitted by the controller.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { maskPhone } from '../../common/session/display.ts';
import type { Session } from '../../common/session/schema.ts';
import { specProblem } from '../../controller/decide.ts';
import { deleteNamespace, kubectl, sessionNamespace } from '../support/cluster.ts';
import { startController, testConfig } from '../support/controller.ts';
import { eventually } from '../support/eventually.ts';
import { phoneHasher } from '../../common/session/phone-hash.ts';

const EXAMPLES = join(import.meta.dirname, '..', '..', 'docs', 'examples');
const SAMPLE_SESSION = join(EXAMPLES, 'session.yaml');
/** The key the sample Session's names are computed under (its comment says so). */
const EXAMPLE_KEY = { TETHER_PHONE_HASH_KEY: 'docs-example-phone-hash-key-0123456789' };

let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('docs'));
});
afterAll(async () => deleteNamespace(kc, ns));

describe('docs/examples on a real API server', () => {
  // values-*.yaml are Helm values, not objects: chart-schema.test.ts renders and checks them.
  const files = readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml') && !f.startsWith('values-'));

  it('has the sample Session', () => {
    expect(files).toContain('session.yaml');
  });

  it.each(files)('kubectl apply --dry-run=server accepts %s and stores nothing', async (file) => {
    const out = await kubectl(['apply', '--dry-run=server', '-n', ns, '-f', join(EXAMPLES, file)]);
    expect(out).toMatch(/created \(server dry run\)/);
    expect(await kubectl(['get', '-n', ns, '-f', join(EXAMPLES, file), '--ignore-not-found', '-o', 'name'])).toBe('');
  });

  it('kubectl apply creates the sample Session with every field it shows, and the controller admits it', async () => {
    const sample = parse(readFileSync(SAMPLE_SESSION, 'utf8')) as Session;
    expect(sample.metadata.namespace, 'the example must work in any namespace (-n)').toBeUndefined();
    expect(await kubectl(['apply', '-n', ns, '-f', SAMPLE_SESSION])).toContain(
      `session.tether.dev/${sample.metadata.name} created`,
    );

    const stored = (await sessions.get(ns, sample.metadata.name!))!;
    expect(stored.spec, 'the API server pruned or defaulted a field of the example').toEqual(sample.spec);
    expect(stored.metadata.labels).toEqual(sample.metadata.labels);
    expect(stored.metadata.annotations).toMatchObject(sample.metadata.annotations!);
    const config = testConfig(ns, EXAMPLE_KEY);
    expect(readFileSync(SAMPLE_SESSION, 'utf8')).toContain(EXAMPLE_KEY.TETHER_PHONE_HASH_KEY);
    expect(
      stored.metadata.name!.startsWith(`${phoneHasher(EXAMPLE_KEY.TETHER_PHONE_HASH_KEY)(stored.spec.phone)}-`),
    ).toBe(true);
    expect(specProblem(stored, config.repoHosts, config.phoneHash)).toBeUndefined();

    const running = await startController(kc, config);
    try {
      const admitted = await eventually(async () => {
        const s = (await sessions.get(ns, sample.metadata.name!))!;
        expect(s.status?.phase).toBe('Starting');
        return s;
      });
      expect(admitted.status?.conditions?.find((c) => c.type === 'Admitted')?.status).toBe('True');
      expect(admitted.status?.display?.phone).toBe(maskPhone(sample.spec.phone));
    } finally {
      await running.stop();
    }
    const table = await kubectl(['get', 'sessions', '-n', ns]);
    expect(table).toContain('+1415•••0123');
    expect(table).not.toContain(sample.spec.phone);
  });
});
