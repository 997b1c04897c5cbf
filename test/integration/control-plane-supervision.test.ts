// `make dev`'s control plane is supervised: etcd and kube-apiserver SIGKILLed together come back
// by themselves (kube-controller-manager, losing its API server, is restarted too), each exit
// reported in one line, and the API server answers again.
import { afterAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../local/control-plane/control-plane.ts';
import { kubectl } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';

let plane: ControlPlane | undefined;
afterAll(async () => plane?.stop());

describe('a supervised control plane', () => {
  it('restarts etcd and kube-apiserver after SIGKILL, saying so, and serves again', async () => {
    const lines: string[] = [];
    plane = await startControlPlane({ onSupervision: (line) => lines.push(line) });
    const [etcd, apiserver] = plane.pids;
    const killedAt = Date.now();
    process.kill(apiserver!, 'SIGKILL');
    process.kill(etcd!, 'SIGKILL');
    await eventually(
      async () => expect(await kubectl(['get', '--raw', '/readyz'], plane!.kubeconfig)).toBe('ok'),
      60_000,
      250,
    );
    console.log(`[control-plane-supervision] serving again ${Date.now() - killedAt} ms after the kill`);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^etcd was killed by SIGKILL at .*; restarting it in 1s/),
        expect.stringMatching(/^kube-apiserver was killed by SIGKILL at .*; restarting it in 1s/),
        expect.stringMatching(/^kube-apiserver restarted \(pid \d+\)$/),
      ]),
    );
    expect(plane.pids.slice(0, 2)).not.toEqual([etcd, apiserver]);
  }, 120_000);
});
