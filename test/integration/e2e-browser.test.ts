// The web chat in Debian's Chromium through the whole stack: type a command, watch progress,
// see the diff image, tap approve, get the pull request. Saves a screenshot as an artifact. The
// chat link's token is traded for a cookie: it leaves the address bar and never reaches a log line.
import { mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';

let e2e: E2E;
let browser: Browser;
beforeAll(async () => {
  // debug: the relay's access log
  e2e = await startE2E({ numbers: ['+14155550171'], relayEnv: { TETHER_LOG_LEVEL: 'debug' } });
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await e2e?.stop();
});

describe('web chat in Chromium', () => {
  it('runs the full approve flow from a phone-sized page', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    const visited: string[] = [];
    const posted: Array<{ text: string; payload?: string }> = [];
    page.on('request', (request) => {
      visited.push(request.url());
      if (request.url().endsWith('/chat/send'))
        posted.push(request.postDataJSON() as { text: string; payload?: string });
    });
    await page.goto(e2e.stack.chatUrl);
    expect(e2e.stack.chatUrl).toContain(e2e.stack.chatToken);
    expect(page.url()).toBe(`${e2e.stack.relayUrl}/chat`);
    await expect.poll(() => page.textContent('#state')).toBe('connected');

    await page.fill(
      '#text',
      'script:\nprogress: Reading index.html\nwrite: index.html = <h1>Hello, dark mode</h1>\nsay: Made the page ' +
        'darker.',
    );
    await page.click('button[type=submit]');

    const bot = page.locator('.msg.bot');
    await bot.filter({ hasText: /On it/ }).waitFor({ timeout: 30_000 });
    await bot.filter({ hasText: /Reading index\.html/ }).waitFor({ timeout: 30_000 });
    const diff = bot.filter({ has: page.locator('img') });
    await diff.waitFor({ timeout: 30_000 });
    await expect
      .poll(
        () =>
          diff.locator('img').evaluate((img) => {
            const loaded = img as unknown as { complete: boolean; naturalWidth: number };
            return loaded.complete ? loaded.naturalWidth : 0;
          }),
        { timeout: 10_000 },
      )
      .toBeGreaterThan(100);

    await page.locator('.actions button', { hasText: 'approve' }).click();
    const done = bot.filter({ hasText: /Pull request opened/ });
    await done.waitFor({ timeout: 30_000 });
    expect(await done.textContent()).toMatch(/https:\/\/\S+\/pull\/1/);
    expect(e2e.github.pulls).toHaveLength(1);
    // The button sent the request it answers, not a bare keyword; the chat shows its title.
    const [session] = await e2e.list();
    const requestId = session!.spec.decisions?.[0]?.requestId;
    expect(posted.at(-1)).toEqual({ id: expect.any(String), text: 'approve', payload: `approve:${requestId}` });
    expect(await page.locator('.msg.me').last().textContent()).toBe('approve');

    // Nothing needs scrolling sideways on a phone.
    const overflow = await page.evaluate(() => {
      const root = (
        globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
      ).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    // Only the first request carried the token; the page, its events, posts and images did not.
    expect(visited.filter((url) => url.includes(e2e.stack.chatToken))).toEqual([e2e.stack.chatUrl]);
    expect(visited.some((url) => url.endsWith('/chat/events'))).toBe(true);
    const access = e2e.logs().filter((line) => line.startsWith('relay: ') && line.includes('"msg":"request"'));
    for (const url of ['/chat?token=[redacted]', '/chat', '/chat/send'])
      expect(
        access.some((line) => line.includes(`"url":"${url}"`)),
        url,
      ).toBe(true);
    expect(e2e.logs().filter((line) => line.includes(e2e.stack.chatToken))).toEqual([]);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/chat-approve.png', fullPage: true });
  });
});
