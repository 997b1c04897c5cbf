// The chart's values for the kubelet node tier (docs/chart.md, "Host-network / loopback test
// tier"): every Pod on the node's network, every address they use on loopback, ports that do not
// collide on one host, the images loaded into the tier's containerd, volumes from its pool.
import { STORAGE_CLASS } from './settings.ts';

export interface TierChartOptions {
  /** Port of the local API server on 127.0.0.1. */
  apiServerPort: number;
  relayPort: number;
  controllerMetricsPort: number;
  /** Port of the egress proxy on 127.0.0.1 (its Pod on the node's network, listening on loopback only). */
  egressPort: number;
  /**
   * Registry and tag the images were built under (`make images IMAGE_REGISTRY=… IMAGE_TAG=…`), loaded
   * into the tier's containerd; none: the chart's own images, pulled (a chart `make release` pushed).
   */
  image?: { registry: string; tag: string };
}

export function tierChartValues(o: TierChartOptions) {
  return {
    hostNetwork: { enabled: true, apiServer: `127.0.0.1:${o.apiServerPort}` },
    // Loaded with `ctr images import`: nothing to pull.
    ...(o.image && { image: { registry: o.image.registry, tag: o.image.tag, pullPolicy: 'Never' } }),
    controller: { metricsPort: o.controllerMetricsPort },
    // Runners reach the forge and the model through the egress proxy, as in a cluster. The forge and
    // the GitHub stand-in of the tier are on loopback: the proxy's blocked ranges leave loopback out
    // (the tier's NetworkPolicy objects are inert; docs/chart.md).
    egress: {
      port: o.egressPort,
      blockedCidrs: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16'],
    },
    relay: {
      port: o.relayPort,
      publicUrl: `http://127.0.0.1:${o.relayPort}`,
      media: { persistence: { enabled: true, storageClassName: STORAGE_CLASS } },
    },
    // One node of the machine's cores: a phone's runner Pod stays live between its commands (runner.keepAlive),
    // so the default request (500m each) would leave no room for the third phone's Pod, or a replacement.
    runner: {
      workspace: { storageClassName: STORAGE_CLASS },
      resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: '2', memory: '4Gi' } },
    },
    // NetworkPolicy objects are inert here (no network plugin), and their install-time lookup of the
    // API server's endpoints would find the loopback address: leave them out.
    networkPolicy: { enabled: false },
  };
}
