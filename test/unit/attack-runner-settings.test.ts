// An independent attack on the install's runner settings (chart `runner.*`, the Deployments'
// security contexts): what an install value may carry into the agent's reach or past Pod Security.
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/config/env.ts';
import { parseConfig } from '../../runner-image/config.ts';
import { HELM_SETUP_TIMEOUT, helmBin, renderError } from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const BASE = { relay: { publicUrl: 'https://tether.example.com' } };
const PASSWORD = 'proxy-canary-s3cret';
const credentialed = `http://tether:${PASSWORD}@proxy.example:3128`;
const session = { TETHER_SESSION_NAME: 'abc-20261122083000-k3x9', TETHER_SESSION_NAMESPACE: 'tether' };

describe('a proxy URL with a credential', () => {
  // It would land in the controller's ConfigMap, the cluster-scoped admission policy's expression,
  // every runner Pod's spec and Claude Code's environment.
  it.each(['httpsProxy', 'httpProxy'])('runner.proxy.%s with user:password@ is refused at render', async (key) => {
    const message = await renderError({ ...BASE, runner: { proxy: { [key]: credentialed } } });
    expect(message).toMatch(new RegExp(`/runner/proxy/${key}`));
  });

  it.each(['HTTPS_PROXY', 'HTTP_PROXY'])('the runner never hands %s with a password to Claude Code', (name) => {
    let agentEnv: Record<string, string> | undefined;
    try {
      agentEnv = parseConfig({ ...session, [name]: credentialed }).agentEnv;
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
    }
    expect(JSON.stringify(agentEnv ?? {})).not.toContain(PASSWORD);
  });
});

describe('the Deployments stay Pod Security restricted', () => {
  // restricted (and baseline) allow only container_t, container_init_t, container_kvm_t and
  // container_engine_t as the SELinux type and no user or role; spc_t runs unconfined by SELinux.
  it.each([
    ['controller', 'securityContext', { type: 'spc_t' }],
    ['relay', 'securityContext', { user: 'system_u', role: 'system_r' }],
    ['controller', 'podSecurityContext', { type: 'spc_t' }],
  ])('%s.%s.seLinuxOptions %j is refused', async (component, field, seLinuxOptions) => {
    const values = { ...BASE, [component]: { [field]: { seLinuxOptions } } };
    if (component === 'relay') Object.assign(values.relay as object, BASE.relay);
    expect(await renderError(values)).toMatch(new RegExp(`/${component}/${field}/seLinuxOptions`));
  });
});
