// Starts a local control plane and keeps it until Ctrl-C:
//   node local/control-plane/cli.ts [--dir DIR] [--no-controller-manager]
// Prints one JSON line {server, kubeconfig, pids} once it is ready.
import { parseArgs } from 'node:util';
import { startControlPlane } from './control-plane.ts';

const { values } = parseArgs({ options: { dir: { type: 'string' }, 'no-controller-manager': { type: 'boolean' } } });
const plane = await startControlPlane({ dir: values.dir, controllerManager: !values['no-controller-manager'] });
console.log(JSON.stringify({ server: plane.server, kubeconfig: plane.kubeconfig, pids: plane.pids }));
const stop = async () => {
  await plane.stop();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
