// kube-scheduler against the local control plane (the process node agent binds Pods itself;
// on this tier Pods and WaitForFirstConsumer volumes are placed by the real scheduler).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubeconfigYaml } from '../control-plane/control-plane.ts';
import { clientCert, type Pki } from '../control-plane/pki.ts';
import { startManaged, type Managed } from '../control-plane/processes.ts';

export async function startScheduler(dir: string, binDir: string, server: string, pki: Pki): Promise<Managed> {
  await mkdir(join(dir, 'pki'), { recursive: true });
  // The user the API server's bootstrap RBAC binds to system:kube-scheduler and system:volume-scheduler.
  const client = await clientCert(join(dir, 'pki'), 'kube-scheduler', '/CN=system:kube-scheduler', pki);
  const kubeconfig = join(dir, 'kube-scheduler.kubeconfig');
  await writeFile(kubeconfig, kubeconfigYaml(server, pki, { name: 'system:kube-scheduler', ...client }));
  return startManaged(
    'kube-scheduler',
    join(binDir, 'kube-scheduler'),
    [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--bind-address=127.0.0.1', '--secure-port=0', '--v=0'],
    join(dir, 'kube-scheduler.log'),
  );
}
