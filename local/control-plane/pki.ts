// Certificates and keys for the local control plane, made with the openssl CLI. Everything lives in
// one folder only the control plane's user may enter (0700); keys are 0600.
import { execFile } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  /** etcd's own CA: it signs etcd's certificate and the one client etcd accepts (the API servers). */
  etcdCaCert: string;
  etcdCert: string;
  etcdKey: string;
  etcdClientCert: string;
  etcdClientKey: string;
}

type Ca = Pick<Pki, 'caCert' | 'caKey'>;

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args);
}

async function newCa(dir: string, name: string, subject: string): Promise<Ca> {
  const caKey = join(dir, `${name}.key`);
  const caCert = join(dir, `${name}.crt`);
  await openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    caKey,
    '-out',
    caCert,
    '-days',
    '365',
    '-subj',
    subject,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ]);
  await chmod(caKey, 0o600);
  return { caCert, caKey };
}

export async function signedCert(dir: string, name: string, subject: string, ext: string, pki: Ca) {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, ext);
  await openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  await chmod(key, 0o600);
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    pki.caCert,
    '-CAkey',
    pki.caKey,
    '-CAcreateserial',
    '-out',
    cert,
    '-days',
    '365',
    '-sha256',
    '-extfile',
    extFile,
  ]);
  return { cert, key };
}

/** A client certificate (clientAuth) for `subject`, signed by the plane's CA. */
export const clientCert = (dir: string, name: string, subject: string, pki: Ca) =>
  signedCert(dir, name, subject, 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n', pki);

const LOOPBACK_SERVER = 'subjectAltName=IP:127.0.0.1,DNS:localhost';

/** etcd's CA, its certificate (serving clients and its peer port) and the API servers' client certificate. */
async function etcdPki(dir: string) {
  const ca = await newCa(dir, 'etcd-ca', '/CN=tether-local-etcd-ca');
  const etcd = await signedCert(
    dir,
    'etcd',
    '/CN=etcd',
    `${LOOPBACK_SERVER}\nextendedKeyUsage=serverAuth,clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n`,
    ca,
  );
  const client = await clientCert(dir, 'apiserver-etcd-client', '/CN=kube-apiserver-etcd-client', ca);
  return {
    etcdCaCert: ca.caCert,
    etcdCert: etcd.cert,
    etcdKey: etcd.key,
    etcdClientCert: client.cert,
    etcdClientKey: client.key,
  };
}

/**
 * Writes a CA, a serving cert for 127.0.0.1, an admin client cert (system:masters), a
 * service-account key pair, and etcd's own CA and certificates, into `dir` (made 0700).
 */
export async function createPki(dir: string): Promise<Pki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const ca = await newCa(dir, 'ca', '/CN=tether-local-ca');
  const serving = await signedCert(
    dir,
    'serving',
    '/CN=kube-apiserver',
    `${LOOPBACK_SERVER},DNS:kubernetes.default.svc\n` +
      'extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n',
    ca,
  );
  const admin = await clientCert(dir, 'admin', '/O=system:masters/CN=tether-admin', ca);
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPub = join(dir, 'sa.pub');
  await openssl(['genrsa', '-out', serviceAccountKey, '2048']);
  await chmod(serviceAccountKey, 0o600);
  await openssl(['rsa', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPub]);
  return {
    ...ca,
    servingCert: serving.cert,
    servingKey: serving.key,
    adminCert: admin.cert,
    adminKey: admin.key,
    serviceAccountKey,
    serviceAccountPub,
    ...(await etcdPki(dir)),
  };
}
