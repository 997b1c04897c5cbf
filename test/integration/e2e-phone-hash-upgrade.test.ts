// End to end: an install upgraded from the unkeyed phone hash. A phone's workspace and a command
// waiting at the upgrade, made as the previous version made them (named by legacyPhoneHash, a real
// Claude Code conversation on the volume), are found again by the relay and the controller running
// with a key: the waiting command and the phone's next one mount that workspace and resume that
// conversation, and everything new is named by the keyed hash. A normal run's log lines carry
// neither the number nor its unkeyed hash.
import { CoreV1Api } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANNOTATION_RECEIVED_AT } from '../../common/session/order.ts';
import {
  ANNOTATION_DELIVERED,
  LABEL_COMPONENT,
  LABEL_PHONE_HASH,
  commandSessionName,
  workspaceName,
} from '../../common/session/names.ts';
import { legacyPhoneHash } from '../../common/session/phone-hash.ts';
import type { Session } from '../../common/session/schema.ts';
import { startE2E, type E2E } from '../support/e2e.ts';

const MIGRATED = '+14155550191';
const DONOR = '+14155550192';
const MARKER = 'left-by-the-earlier-run.txt';

let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({ numbers: [MIGRATED, DONOR] });
}, 90_000);
afterAll(async () => e2e?.stop());

const mine = async (phone: string) => (await e2e.list()).filter((s) => s.spec.phone === phone);
const volume = (claim: string) => join(e2e.stateDir, 'volumes', e2e.stack.runnerNamespace, claim);

/** The files under `dir` named `name` (as root: the folders belong to the Pods' ids). */
function find(dir: string, name: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((path) => path.split('/').at(-1) === name)
    .map((path) => join(dir, path));
}

/**
 * What the previous version left for MIGRATED: its workspace PVC, named and labelled by the unkeyed
 * hash, holding a real conversation (the donor phone's, made by a run of this stack, copied onto
 * the volume) and a file of its own.
 */
async function previousWorkspace(donor: Session): Promise<string> {
  const claim = workspaceName(legacyPhoneHash(MIGRATED));
  execFileSync('cp', ['-a', volume(donor.spec.workspace), volume(claim)]);
  writeFileSync(join(volume(claim), MARKER), 'from before the upgrade\n');
  const labels = {
    [LABEL_PHONE_HASH]: legacyPhoneHash(MIGRATED),
    [LABEL_COMPONENT]: 'workspace',
    'app.kubernetes.io/part-of': 'tether',
  };
  await e2e.kubeConfig.makeApiClient(CoreV1Api).createNamespacedPersistentVolumeClaim({
    namespace: e2e.stack.runnerNamespace,
    body: {
      metadata: { name: claim, labels },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
  });
  return claim;
}

/** A command of MIGRATED the previous version took and had not started yet: its Session as that version wrote it. */
async function previousCommand(donor: Session, claim: string): Promise<Session> {
  const hash = legacyPhoneHash(MIGRATED);
  return e2e.sessions.create(
    donor.metadata.namespace!,
    commandSessionName(hash, `SM${Date.now()}`),
    {
      ...donor.spec,
      phone: MIGRATED,
      prompt: 'script:\nsay: waiting at the upgrade',
      workspace: claim,
      resumeAgentSession: donor.status!.result!.agentSessionId!,
    },
    {
      labels: { [LABEL_PHONE_HASH]: hash, 'app.kubernetes.io/part-of': 'tether' },
      annotations: {
        [ANNOTATION_DELIVERED]: JSON.stringify({ n: 1, seq: 0, started: true, queued: false }),
        [ANNOTATION_RECEIVED_AT]: new Date().toISOString(),
      },
    },
  );
}

const claimOf = async (session: Session) => {
  const pod = await e2e.kubeConfig
    .makeApiClient(CoreV1Api)
    .readNamespacedPod({ namespace: e2e.stack.runnerNamespace, name: `${session.metadata.name}-runner` });
  return pod.spec!.volumes!.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName;
};

describe('end to end: upgrading from the unkeyed phone hash', () => {
  it("keeps a phone's workspace and conversation; new names are keyed; no number or unkeyed hash logged", async () => {
    const donor = e2e.phone(DONOR);
    await donor.send('script:\nsay: the donated conversation');
    await donor.next(/the donated conversation/);
    const [donated] = await mine(DONOR);
    expect(donated!.spec.workspace).toBe(workspaceName(e2e.stack.phoneHash(DONOR)));

    const conversation = donated!.status!.result!.agentSessionId!;
    const claim = await previousWorkspace(donated!);
    const [transcript] = find(volume(claim), `${conversation}.jsonl`);
    const linesBefore = readFileSync(transcript!, 'utf8').trim().split('\n').length;
    // The upgrade: the controller starts again, its caches filled from what is there.
    await e2e.stack.restart('controller');
    await e2e.stack.restart('relay');

    const phone = e2e.phone(MIGRATED);
    const waiting = await previousCommand(donated!, claim);
    await phone.next(/waiting at the upgrade/);
    await phone.send('script:\nsay: after the upgrade');
    await phone.next(/after the upgrade/);
    const [before, after] = await mine(MIGRATED);
    expect(before!.metadata.name).toBe(waiting.metadata.name);
    expect(before!.status?.result?.agentSessionId).toBe(conversation);
    expect(await claimOf(before!)).toBe(claim);
    const keyed = e2e.stack.phoneHash(MIGRATED);
    expect(after!.metadata.name!.startsWith(`${keyed}-`)).toBe(true);
    expect(after!.metadata.labels?.[LABEL_PHONE_HASH]).toBe(keyed);
    expect(after!.spec.workspace).toBe(workspaceName(keyed));
    expect(after!.spec.resumeAgentSession).toBe(conversation);
    expect(after!.status?.phase).toBe('Succeeded');
    expect(after!.status?.result?.agentSessionId).toBe(conversation);
    expect(await claimOf(after!)).toBe(claim);

    const core = e2e.kubeConfig.makeApiClient(CoreV1Api);
    const pod = await core.readNamespacedPod({
      namespace: e2e.stack.runnerNamespace,
      name: `${after!.metadata.name}-runner`,
    });
    expect(pod.metadata!.labels?.[LABEL_PHONE_HASH]).toBe(keyed);
    expect(pod.spec!.serviceAccountName).toBe(`runner-${keyed}`);
    const { items } = await core.listNamespacedPersistentVolumeClaim({ namespace: e2e.stack.runnerNamespace });
    // Each workspace with its git store, the legacy claim's named after it.
    const workspaces = [claim, donated!.spec.workspace];
    expect(items.map((pvc) => pvc.metadata!.name).sort()).toEqual(
      [...workspaces, ...workspaces.map((w) => `${w}.git`)].sort(),
    );
    expect(existsSync(volume(workspaceName(keyed)))).toBe(false);
    expect(readFileSync(join(volume(claim), MARKER), 'utf8')).toBe('from before the upgrade\n');
    expect(readFileSync(transcript!, 'utf8').trim().split('\n').length).toBeGreaterThan(linesBefore);

    const logs = e2e.logs().join('\n');
    expect(logs).toContain(e2e.stack.phoneHash(DONOR));
    expect(logs).not.toContain(legacyPhoneHash(DONOR));
    expect(logs).not.toContain(DONOR.slice(1));
    expect(logs).not.toContain(MIGRATED.slice(1));
  }, 240_000);
});
