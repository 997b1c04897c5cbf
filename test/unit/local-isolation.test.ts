// The local stack's isolation pieces on their own: host id ranges per claim, who owns a volume's
// folder (set, not added to), state closed to others, and the warning when it cannot isolate.
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { notIsolatedWarning } from '../../local/isolation.ts';
import { containerIdOf, FIRST_HOST_ID, hostId, idRange, rehome, SLOT_SIZE } from '../../local/node-agent/id-ranges.ts';
import { claimVolume } from '../../local/node-agent/identity.ts';
import { closeTree } from '../../local/private-files.ts';

const asRoot = process.getuid?.() === 0;
const state = () => mkdtempSync(join(tmpdir(), 'tether-ids-'));
const modeOf = (path: string) => statSync(path).mode & 0o7777;

describe('id ranges', () => {
  it('keeps one range per key, another for each other key, in a file of the node agent alone', () => {
    const dir = state();
    const first = idRange(dir, 'claim ns/ws-a');
    expect(idRange(dir, 'claim ns/ws-a')).toEqual(first);
    const others = ['claim ns/ws-b', 'claim other/ws-a', 'pod 1234'].map((key) => idRange(dir, key).base);
    expect(new Set([first.base, ...others]).size).toBe(4);
    expect((first.base - FIRST_HOST_ID) % SLOT_SIZE).toBe(0);
    expect(modeOf(join(dir, 'id-ranges.json'))).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, 'id-ranges.json'), 'utf8')).salt).toMatch(/^[0-9a-f]{32}$/);
  });

  it('maps container ids 0–65535 and refuses others; rehome keeps the container id', () => {
    const range = idRange(state(), 'claim ns/ws');
    expect(hostId(range, 1001)).toBe(range.base + 1001);
    expect(containerIdOf(hostId(range, 1001))).toBe(1001);
    for (const bad of [-1, 65536, 1.5]) expect(() => hostId(range, bad)).toThrow(/outside the container ids/);
    expect(rehome(range, 1001)).toBe(range.base + 1001); // an id from before ranges
    expect(rehome(range, FIRST_HOST_ID + 3 * SLOT_SIZE + 1000)).toBe(range.base + 1000); // an id of another range
  });
});

const runnerLike = (volumes: V1Volume[], fsGroup?: number): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u' },
  spec: {
    securityContext: { runAsUser: 1000, runAsGroup: 1000, ...(fsGroup === undefined ? {} : { fsGroup }) },
    containers: [
      {
        name: 'runner',
        volumeMounts: [
          { name: 'ws', mountPath: '/ws' },
          { name: 'own', mountPath: '/own' },
        ],
      },
      { name: 'agent', securityContext: { runAsUser: 1001 }, volumeMounts: [{ name: 'ws', mountPath: '/ws' }] },
    ],
    volumes,
  },
});

describe.runIf(asRoot)('who owns a volume on the local node', () => {
  it(`gives a claim to the Pod's fsGroup alone (2770), whatever \
it was, and moves what is inside to the Pod's ids`, () => {
    const dir = state();
    const range = idRange(dir, 'claim ns/ws');
    const claim = join(dir, 'ws');
    mkdirSync(join(claim, 'repo'), { recursive: true });
    writeFileSync(join(claim, 'repo', 'a.txt'), 'x');
    chmodSync(claim, 0o777);
    chmodSync(join(claim, 'repo', 'a.txt'), 0o666);
    chownSync(join(claim, 'repo', 'a.txt'), 1001, 1000); // left by a node before ranges
    const volume = { name: 'ws', persistentVolumeClaim: { claimName: 'ws' } };
    claimVolume(claim, runnerLike([volume, { name: 'own', emptyDir: {} }], 1000), volume, range);
    expect(statSync(claim)).toMatchObject({ uid: range.base, gid: range.base + 1000 });
    expect(modeOf(claim)).toBe(0o2770);
    expect(statSync(join(claim, 'repo', 'a.txt'))).toMatchObject({ uid: range.base + 1001, gid: range.base + 1000 });
    expect(modeOf(join(claim, 'repo', 'a.txt'))).toBe(0o660);
    expect(modeOf(join(claim, 'repo'))).toBe(0o2770);
  });

  it(`keeps a volume one container mounts for that container's user (0700), and refuses to share one without an \
fsGroup`, () => {
    const dir = state();
    const range = idRange(dir, 'pod u');
    const own = join(dir, 'own');
    mkdirSync(own, { mode: 0o777 });
    const volumes = [
      { name: 'ws', emptyDir: {} },
      { name: 'own', emptyDir: {} },
    ];
    claimVolume(own, runnerLike(volumes), volumes[1]!, range);
    expect(statSync(own)).toMatchObject({ uid: range.base + 1000, gid: range.base + 1000 });
    expect(modeOf(own)).toBe(0o700);
    mkdirSync(join(dir, 'ws'));
    expect(() => claimVolume(join(dir, 'ws'), runnerLike(volumes), volumes[0]!, range)).toThrow(/no fsGroup/);
  });

  it(`keeps a claim one container mounts (the runner's git store) for that user alone, not the Pod's fsGroup: the \
agent shares the group and the folder's name is known`, () => {
    const dir = state();
    const range = idRange(dir, 'claim ns/ws');
    const store = join(dir, 'ws.git');
    mkdirSync(join(store, 'store.git'), { recursive: true, mode: 0o777 });
    const volumes = [
      { name: 'ws', persistentVolumeClaim: { claimName: 'ws' } },
      { name: 'own', persistentVolumeClaim: { claimName: 'ws.git' } },
    ];
    claimVolume(store, runnerLike(volumes, 1000), volumes[1]!, range);
    expect(statSync(store)).toMatchObject({ uid: range.base + 1000 });
    expect(modeOf(store)).toBe(0o700);
    expect(modeOf(join(store, 'store.git')) & 0o077).toBe(0);
  });
});

describe("the stack's own state", () => {
  it('closes a folder left open: every folder 0700, every file 0600', () => {
    const dir = join(state(), 'journal');
    mkdirSync(join(dir, 'sub'), { recursive: true, mode: 0o755 });
    writeFileSync(join(dir, 'sub', 'inbound.jsonl'), '{}', { mode: 0o644 });
    closeTree(dir);
    expect([modeOf(dir), modeOf(join(dir, 'sub')), modeOf(join(dir, 'sub', 'inbound.jsonl'))]).toEqual([
      0o700, 0o700, 0o600,
    ]);
  });

  it('make dev as another user than root says loudly that agents are not isolated; as root it says nothing', () => {
    const warning = notIsolatedWarning(1000)!;
    expect(warning).toMatch(/NOT ISOLATED: make dev runs as uid 1000, not root/);
    expect(warning).toMatch(/Agents are not isolated from each other or from the stack/);
    expect(warning).toMatch(/EGRESS NOT ENFORCED: .* an agent reaches\n!! everything this machine reaches/);
    expect(notIsolatedWarning(0)).toBeUndefined();
  });
});
