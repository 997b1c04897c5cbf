// A phone's default repository in the relay's ConfigMap on a real API server: kept under the keyed
// phone hash; a choice an earlier version kept under the unkeyed hash is read, and replaced by the
// keyed entry on the next choice.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionFromKubeConfig } from '../../common/kube/connection.ts';
import { legacyPhoneHash } from '../../common/session/phone-hash.ts';
import { ConfigMapRepoChoices } from '../../relay/inbound/repo-choices.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const PHONE = '+14155550171';
const NAME = 'tether-relay-repo-choices';

let kc: KubeConfig;
let ns: string;
beforeAll(async () => {
  ({ kc, ns } = await sessionNamespace('repo-choices'));
});
afterAll(async () => deleteNamespace(kc, ns));

const data = async () =>
  (await kc.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: ns, name: NAME })).data ?? {};

describe("the relay's repository choices", () => {
  it('reads a choice kept under the unkeyed hash, and keeps the next one under the keyed hash only', async () => {
    await kc.makeApiClient(CoreV1Api).createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: NAME }, data: { [legacyPhoneHash(PHONE)]: 'web', other: 'sample' } },
    });
    const choices = new ConfigMapRepoChoices(connectionFromKubeConfig(kc), {
      name: NAME,
      namespace: ns,
      phoneHash: testPhoneHash,
    });
    expect(await choices.get(PHONE)).toBe('web');
    await choices.set(PHONE, 'docs');
    expect(await data()).toEqual({ [testPhoneHash(PHONE)]: 'docs', other: 'sample' });
    expect(await choices.get(PHONE)).toBe('docs');
    expect(await choices.get('+14155550172')).toBeUndefined();
  });
});
