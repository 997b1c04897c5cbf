// The chart's admission policy for Sessions (ValidatingAdmissionPolicy, CEL) on the real API server,
// installed by helm: only the relay's ServiceAccount and the groups in sessions.creators.groups may
// create a Session or change its spec, whatever RBAC grants; status writes of the controller and
// the runners, and metadata-only updates, still pass.
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desiredIdentity } from '../../controller/identity.ts';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import { API_VERSION, KIND, type Session } from '../../common/session/schema.ts';
import { adminKubeConfig, createNamespace, deleteNamespace, installSessionCrd } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { helmBin } from '../unit/chart-render.ts';
import { deleteClusterScoped, helmRelease, kubectlOk, kubectlResult, manifestFile } from './chart-cluster.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const phone = '+14155550123';
const OPERATORS = 'tether-operators';
let kc: KubeConfig;
let ns: string;
const serviceAccount = (name: string) => [`--as=system:serviceaccount:${ns}:${name}`];
const intruder = () => serviceAccount('intruder');
const relay = () => serviceAccount('tether-relay');
const refusal = (who: string) =>
  `only the Tether relay and the groups in sessions.creators.groups may create Sessions or change their spec; ` +
  `${who} may not`;

function session(name = sessionName(testPhoneHash(phone))): Session {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name, namespace: ns },
    spec: {
      phone,
      prompt: 'make the navbar sticky',
      repo: { url: 'https://github.com/acme/web.git', baseBranch: 'main' },
      workspace: workspaceName(testPhoneHash(phone)),
    },
  };
}

const create = (as: string[], s = session()) => kubectlResult(['create', '-n', ns, '-f', manifestFile([s]), ...as]);
const patch = (as: string[], name: string, body: object, subresource?: 'status') =>
  kubectlResult([
    'patch',
    `sessions.tether.dev/${name}`,
    '-n',
    ns,
    '--type=merge',
    '-p',
    JSON.stringify(body),
    ...(subresource ? ['--subresource=status'] : []),
    ...as,
  ]);

beforeAll(async () => {
  helmBin();
  kc = adminKubeConfig();
  await installSessionCrd(kc);
  ns = await createNamespace(kc, 'vap');
  await helmRelease('install', 'tether', ns, { sessions: { creators: { groups: [OPERATORS] } } });
  // RBAC lets the intruder and an operator write Sessions: what refuses the intruder is the policy.
  await kubectlOk(['create', 'serviceaccount', 'intruder', '-n', ns]);
  await kubectlOk([
    'create',
    'role',
    'session-writer',
    '-n',
    ns,
    '--verb=create,get,patch',
    '--resource=sessions.tether.dev',
  ]);
  await kubectlOk([
    'create',
    'rolebinding',
    'session-writer',
    '-n',
    ns,
    '--role=session-writer',
    `--serviceaccount=${ns}:intruder`,
    `--group=${OPERATORS}`,
  ]);
  // The API server loads a new policy shortly after it is created: wait until it refuses.
  await eventually(async () => expect((await create(intruder())).stderr).toContain('denied request'), 30_000, 250);
}, 900_000);
afterAll(async () => {
  await deleteClusterScoped([ns]);
  await deleteNamespace(kc, ns);
});

describe('who may create a Session', () => {
  it("an unauthorised ServiceAccount is refused with the policy's message, though RBAC allows it", async () => {
    const result = await create(intruder());
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(refusal(`system:serviceaccount:${ns}:intruder`));
    expect(
      (await kubectlOk(['auth', 'can-i', 'create', 'sessions.tether.dev', '-n', ns, ...intruder()])).stdout.trim(),
    ).toBe('yes');
  });

  it('a cluster admin not in sessions.creators.groups is refused too', async () => {
    const result = await create([]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('may not');
  });

  it("the relay's ServiceAccount and a member of a named group may", async () => {
    expect((await create(relay())).code).toBe(0);
    const byOperator = await create(['--as=alice', `--as-group=${OPERATORS}`]);
    expect(byOperator.stderr).toBe('');
    expect(byOperator.code).toBe(0);
  });
});

describe('who may change a Session', () => {
  let name: string;
  beforeAll(async () => {
    name = sessionName(testPhoneHash(phone));
    await kubectlOk(['create', '-n', ns, '-f', manifestFile([session(name)]), ...relay()]);
  });

  it('the relay may cancel; the intruder may not touch the spec', async () => {
    const tampered = await patch(intruder(), name, {
      spec: { decisions: [{ requestId: 'r1', action: 'approve', at: '2026-11-23T08:00:00Z' }] },
    });
    expect(tampered.code).not.toBe(0);
    expect(tampered.stderr).toContain(refusal(`system:serviceaccount:${ns}:intruder`));
    expect((await patch(relay(), name, { spec: { cancel: true } })).code).toBe(0);
  });

  it("the controller and the Session's runner still write status; metadata-only updates pass", async () => {
    const stored = JSON.parse(
      (await kubectlOk(['get', `sessions.tether.dev/${name}`, '-n', ns, '-o', 'json'])).stdout,
    ) as Session;
    const {
      serviceAccount: runnerAccount,
      role,
      roleBinding,
    } = desiredIdentity(stored, [name], { runnerNamespace: ns, phoneHash: testPhoneHash });
    await kubectlOk(['create', '-f', manifestFile([runnerAccount, role, roleBinding])]);
    const controllerWrite = await patch(
      serviceAccount('tether-controller'),
      name,
      { status: { phase: 'Starting' } },
      'status',
    );
    expect(controllerWrite.stderr).toBe('');
    const runnerWrite = await eventually(
      async () => {
        const result = await patch(
          serviceAccount(runnerAccount.metadata!.name!),
          name,
          { status: { phase: 'Working', progress: [{ seq: 1, at: '2026-11-23T08:00:00Z', text: 'Reading' }] } },
          'status',
        );
        expect(result.stderr).toBe('');
        return result;
      },
      10_000,
      200,
    );
    expect(runnerWrite.code).toBe(0);
    // As the garbage collector does with finalizers: the spec is the same, so anyone with RBAC may.
    expect((await patch([], name, { metadata: { labels: { checked: 'yes' } } })).code).toBe(0);
    expect(
      (await kubectlOk(['get', `sessions.tether.dev/${name}`, '-n', ns, '-o', 'jsonpath={.status.phase}'])).stdout,
    ).toBe('Working');
  });
});
