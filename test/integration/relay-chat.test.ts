// The web chat in Debian's Chromium: send a command, watch progress arrive, tap approve.
// The test plays controller and runner by patching the Session's status on the real API server.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionClient } from '../../common/kube/sessions.ts';
import { LABEL_PHONE_HASH } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { deleteNamespace, sessionNamespace } from '../support/cluster.ts';
import { eventually } from '../support/eventually.ts';
import { CHAT_TOKEN, startTestRelay, type TestRelay } from '../support/relay.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
let kc: KubeConfig;
let ns: string;
let sessions: SessionClient;
let relay: TestRelay;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  ({ kc, ns, sessions } = await sessionNamespace('relay-chat'));
  relay = await startTestRelay({ kubeConfig: kc, namespace: ns });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu'],
  });
  page = await browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
});
afterAll(async () => {
  await browser?.close();
  await relay?.close();
  await deleteNamespace(kc, ns);
});

const bot = () => page.locator('.msg.bot');

describe('web chat in Chromium', () => {
  it('refuses the page without the token', async () => {
    expect((await fetch(`${relay.url}/chat`)).status).toBe(401);
    expect((await fetch(`${relay.url}/chat?token=wrong-token-wrong`)).status).toBe(401);
    expect(
      (
        await fetch(`${relay.url}/chat/send`, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(401);
  });

  it('sends a command, shows progress and the diff image, and approves with a tap', async () => {
    await page.goto(`${relay.url}/chat?token=${CHAT_TOKEN}`);
    expect(page.url()).toBe(`${relay.url}/chat`); // the token was traded for a cookie and left the address bar
    await page.getByText('connected').waitFor();
    await page.getByLabel('message').fill('make the navbar sticky');
    await page.keyboard.press('Enter');
    await page.locator('.msg.me', { hasText: 'make the navbar sticky' }).waitFor();
    await bot()
      .filter({ hasText: /^On it \(session [0-9a-f]{4}\)/ })
      .waitFor();

    const phone = relay.config.webChat!.phone;
    const [session] = await eventually(async () => {
      const list = (await sessions.list(ns, `${LABEL_PHONE_HASH}=${testPhoneHash(phone)}`)).items;
      expect(list).toHaveLength(1);
      return list as [Session];
    });
    const name = session.metadata.name!;
    expect(session.spec).toMatchObject({ phone, prompt: 'make the navbar sticky' });

    const at = () => new Date().toISOString();
    await sessions.patchStatus(ns, name, { phase: 'Starting' });
    await sessions.patchStatus(ns, name, {
      phase: 'Working',
      progress: [{ seq: 1, at: at(), text: 'Editing Navbar.tsx' }],
    });
    await bot().filter({ hasText: '⏳ Editing Navbar.tsx' }).waitFor();

    mkdirSync(join(relay.config.media.dir, ns, name), { recursive: true });
    writeFileSync(join(relay.config.media.dir, ns, name, 'diff.png'), PNG);
    await sessions.patchStatus(ns, name, {
      phase: 'AwaitingApproval',
      pending: { id: 'c1', kind: 'changes', summary: '1 file changed', createdAt: at() },
      result: {
        diffStat: ' Navbar.tsx | 2 +-',
        media: [{ kind: 'diff', ref: `${ns}/${name}/diff.png`, contentType: 'image/png' }],
      },
    });
    const image = bot().locator('img');
    await image.waitFor();
    await expect.poll(() => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBe(1);
    await page.getByRole('button', { name: 'approve' }).tap();
    const decided = await eventually(async () => {
      const current = (await sessions.get(ns, name))!;
      expect(current.spec.decisions).toHaveLength(1);
      return current;
    });
    expect(decided.spec.decisions![0]).toMatchObject({ requestId: 'c1', action: 'approve', by: 'web:+1555•••0100' });
    await page.locator('.msg.me', { hasText: 'approve' }).waitFor();

    await sessions.patchStatus(ns, name, { phase: 'Publishing', pending: null as never });
    await sessions.patchStatus(ns, name, {
      phase: 'Succeeded',
      result: { prUrl: 'https://github.com/acme/web/pull/9' },
    });
    await bot().filter({ hasText: '✅ Pull request opened: https://github.com/acme/web/pull/9' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth')).toBe(
      true,
    );
  });

  it('shows the history to a page opened later', async () => {
    const second = await browser.newPage();
    await second.goto(`${relay.url}/chat?token=${CHAT_TOKEN}`);
    await second.locator('.msg.bot', { hasText: 'Pull request opened' }).waitFor();
    await second.close();
  });
});
