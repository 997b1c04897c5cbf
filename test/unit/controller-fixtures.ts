// Shared fixtures for the controller's unit tests.
import { LABEL_PHONE_HASH, workspaceName } from '../../common/session/names.ts';
import type { Phase, Session, SessionStatus } from '../../common/session/schema.ts';
import { loadConfig, type ControllerConfig } from '../../controller/config.ts';
import { TEST_PHONE_HASH_KEY, testPhoneHash } from '../support/phone-hash.ts';

export const PHONE = '+14155550123';

export function unitConfig(overrides: Partial<ControllerConfig> = {}): ControllerConfig {
  return {
    ...loadConfig({
      TETHER_RUNNER_IMAGE: 'tether-runner:test',
      POD_NAME: 'ctl-0',
      TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY,
    }),
    ...overrides,
  };
}

export interface SessionOptions {
  name?: string;
  uid?: string;
  phone?: string;
  created?: string;
  phase?: Phase;
  status?: SessionStatus;
  cancel?: boolean;
  timeouts?: { run?: string; approval?: string };
}

let seq = 0;

export function testSession(options: SessionOptions = {}): Session {
  const phone = options.phone ?? PHONE;
  const name = options.name ?? `s-${String(seq++).padStart(4, '0')}`;
  return {
    apiVersion: 'tether.dev/v1alpha1',
    kind: 'Session',
    metadata: {
      name,
      namespace: 'tether',
      uid: options.uid ?? `uid-${name}`,
      generation: 1,
      resourceVersion: '1',
      creationTimestamp: options.created ?? '2026-11-22T08:00:00Z',
      labels: { [LABEL_PHONE_HASH]: testPhoneHash(phone) },
    },
    spec: {
      phone,
      prompt: 'make the navbar sticky',
      repo: { url: 'https://github.com/acme/web.git' },
      workspace: workspaceName(testPhoneHash(phone)),
      ...(options.cancel ? { cancel: true } : {}),
      ...(options.timeouts ? { timeouts: options.timeouts } : {}),
    },
    ...(options.status || options.phase
      ? { status: { ...(options.phase ? { phase: options.phase } : {}), ...options.status } }
      : {}),
  };
}
