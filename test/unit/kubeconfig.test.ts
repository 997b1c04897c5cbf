// Finding the API server without client-node: kubeconfig files as kubectl reads them, and
// client-node for what the short path does not cover.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConnection } from '../../common/kube/kubeconfig.ts';

const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n');

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), 'tether-kubeconfig-'));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'here',
      clusters: [
        { name: 'other', cluster: { server: 'https://127.0.0.1:1' } },
        { name: 'c', cluster },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'here', context: { cluster: 'c', user: 'u' } }],
    }),
  );
  return { dir, file };
}

describe('loadConnection', () => {
  it('reads the current context: server, CA data and token', async () => {
    const { file } = kubeconfig(
      { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': CA.toString('base64') },
      { token: 'abc' },
    );
    const connection = await loadConnection({ KUBECONFIG: file });
    expect(connection.server).toBe('https://127.0.0.1:6443');
    const options = await connection.requestOptions();
    expect(options.headers).toEqual({ Authorization: 'Bearer abc' });
    expect(options.ca).toEqual(CA);
    expect(options.rejectUnauthorized).toBeUndefined();
  });

  it('resolves certificate files relative to the kubeconfig, and honours insecure-skip-tls-verify', async () => {
    const elsewhere = join(mkdtempSync(join(tmpdir(), 'tether-key-')), 'admin.key');
    writeFileSync(elsewhere, 'key');
    const { dir, file } = kubeconfig(
      { server: 'https://127.0.0.1:6443', 'certificate-authority': 'pki/ca.crt', 'insecure-skip-tls-verify': true },
      { 'client-certificate': 'pki/admin.crt', 'client-key': elsewhere },
    );
    mkdirSync(join(dir, 'pki'));
    writeFileSync(join(dir, 'pki', 'ca.crt'), CA);
    writeFileSync(join(dir, 'pki', 'admin.crt'), 'cert');
    const options = await (await loadConnection({ KUBECONFIG: file })).requestOptions();
    expect(options).toMatchObject({
      ca: CA,
      cert: Buffer.from('cert'),
      key: Buffer.from('key'),
      rejectUnauthorized: false,
    });
    expect(options.headers).toEqual({});
  });

  it('uses $HOME/.kube/config when KUBECONFIG is not set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-home-'));
    mkdirSync(join(dir, '.kube'));
    writeFileSync(
      join(dir, '.kube', 'config'),
      JSON.stringify({
        'current-context': 'h',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:7443' } }],
        users: [{ name: 'u', user: { token: 'from-home' } }],
        contexts: [{ name: 'h', context: { cluster: 'c', user: 'u' } }],
      }),
    );
    const connection = await loadConnection({ HOME: dir });
    expect(connection.server).toBe('https://127.0.0.1:7443');
    expect((await connection.requestOptions()).headers).toEqual({ Authorization: 'Bearer from-home' });
  });

  it('hands anything else (here an exec credential plugin) to client-node', async () => {
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'from-exec' },
    });
    const { file } = kubeconfig(
      { server: 'https://127.0.0.1:8443' },
      {
        exec: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: 'sh',
          args: ['-c', `echo '${credential}'`],
          interactiveMode: 'Never',
        },
      },
    );
    const connection = await loadConnection({ KUBECONFIG: file });
    expect(connection.server).toBe('https://127.0.0.1:8443');
    expect((await connection.requestOptions()).headers).toMatchObject({ Authorization: 'Bearer from-exec' });
  });
});
