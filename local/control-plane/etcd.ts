// etcd for the local control plane: TLS on both its ports (127.0.0.1), and only a client holding a
// certificate of etcd's own CA — the API servers' — is served. An agent process on the same machine
// reaches the port and gets no key, no value and no write: without that certificate the TLS
// handshake fails, and the certificate's key is in the control plane's folder (0700).
import { join } from 'node:path';
import { startManaged, type Managed } from './processes.ts';
import type { Pki } from './pki.ts';

export interface EtcdSpec {
  binDir: string;
  dir: string;
  pki: Pki;
  clientPort: number;
  peerPort: number;
}

export const etcdUrl = (clientPort: number) => `https://127.0.0.1:${clientPort}`;

export function startEtcd(spec: EtcdSpec): Managed {
  const { pki } = spec;
  const peerUrl = `https://127.0.0.1:${spec.peerPort}`;
  return startManaged(
    'etcd',
    join(spec.binDir, 'etcd'),
    [
      '--data-dir',
      join(spec.dir, 'etcd'),
      '--listen-client-urls',
      etcdUrl(spec.clientPort),
      '--advertise-client-urls',
      etcdUrl(spec.clientPort),
      '--cert-file',
      pki.etcdCert,
      '--key-file',
      pki.etcdKey,
      '--trusted-ca-file',
      pki.etcdCaCert,
      '--client-cert-auth',
      '--listen-peer-urls',
      peerUrl,
      '--initial-advertise-peer-urls',
      peerUrl,
      '--initial-cluster',
      `default=${peerUrl}`,
      '--peer-cert-file',
      pki.etcdCert,
      '--peer-key-file',
      pki.etcdKey,
      '--peer-trusted-ca-file',
      pki.etcdCaCert,
      '--peer-client-cert-auth',
      '--unsafe-no-fsync',
      '--log-level',
      'warn',
    ],
    join(spec.dir, 'etcd.log'),
  );
}

/** The API server's flags for etcd: its address, etcd's CA, and the client certificate etcd asks for. */
export const apiServerEtcdFlags = (url: string, pki: Pki): string[] => [
  `--etcd-servers=${url}`,
  `--etcd-cafile=${pki.etcdCaCert}`,
  `--etcd-certfile=${pki.etcdClientCert}`,
  `--etcd-keyfile=${pki.etcdClientKey}`,
];
