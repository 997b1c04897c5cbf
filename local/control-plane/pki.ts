// Certificates and keys for the local control plane, made with the openssl CLI.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
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
}

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args);
}

export async function signedCert(dir: string, name: string, subject: string, ext: string, pki: Pick<Pki, 'caCert' | 'caKey'>) {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, ext);
  await openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  await openssl(['x509', '-req', '-in', csr, '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial',
    '-out', cert, '-days', '365', '-sha256', '-extfile', extFile]);
  return { cert, key };
}

/** A client certificate (clientAuth) for `subject`, signed by the plane's CA. */
export const clientCert = (dir: string, name: string, subject: string, pki: Pick<Pki, 'caCert' | 'caKey'>) =>
  signedCert(dir, name, subject, 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment\n', pki);

/** Writes a CA, a serving cert for 127.0.0.1, an admin client cert (system:masters) and a service-account key pair. */
export async function createPki(dir: string): Promise<Pki> {
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.crt');
  await openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', caKey, '-out', caCert,
    '-days', '365', '-subj', '/CN=tether-local-ca', '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']);
  const ca = { caCert, caKey };
  const serving = await signedCert(dir, 'serving', '/CN=kube-apiserver',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n', ca);
  const admin = await clientCert(dir, 'admin', '/O=system:masters/CN=tether-admin', ca);
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPub = join(dir, 'sa.pub');
  await openssl(['genrsa', '-out', serviceAccountKey, '2048']);
  await openssl(['rsa', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPub]);
  return {
    ...ca,
    servingCert: serving.cert, servingKey: serving.key,
    adminCert: admin.cert, adminKey: admin.key,
    serviceAccountKey, serviceAccountPub,
  };
}
