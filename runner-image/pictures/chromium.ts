// Pictures for the phone: the diff pages (HTML → PNG) and page screenshots (JPEG ≤ 600 KB),
// both through playwright-core driving Debian's Chromium.
import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { LIMITS } from '../../common/session/schema.ts';
import { DIFF_LAYOUT } from './diff-layout.ts';
import { isLoopbackHost, isLoopbackUrl, LOOPBACK_HOSTS } from './loopback.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const MAX_SCREENSHOT_BYTES = 600 * 1024;

export interface BrowserOptions {
  /** Extra Chromium flags (tests map a made-up host name to 127.0.0.1 with --host-resolver-rules). */
  extraArgs?: string[];
  /**
   * Chromium's whole environment (browserEnvironment): never the supervisor's, which holds the
   * tokens, and no folder the agent can write — Chromium and the libraries it loads (NSS modules,
   * Vulkan layers, fontconfig) read configuration under HOME and XDG_* that can name code to load.
   */
  env?: Record<string, string>;
}

/** A private folder (the supervisor's own volume) as Chromium's HOME and XDG folders; PATH; nothing else. */
export function browserEnvironment(home: string, path: string): Record<string, string> {
  return {
    PATH: path,
    HOME: home,
    LANG: 'C.UTF-8',
    XDG_CONFIG_HOME: `${home}/.config`,
    XDG_CACHE_HOME: `${home}/.cache`,
    XDG_DATA_HOME: `${home}/.local/share`,
    XDG_DATA_DIRS: '/usr/local/share:/usr/share',
    XDG_CONFIG_DIRS: '/etc/xdg',
  };
}

export class Browsers {
  private readonly options: BrowserOptions;
  private browser: Promise<Browser> | undefined;
  private refusing: Promise<Server> | undefined;

  constructor(options: BrowserOptions = {}) {
    this.options = options;
  }

  get(): Promise<Browser> {
    // Loaded on first use: most runs never need a browser, and start-up time matters. A proxy from
    // the environment (meant for the agent) is never the browser's: it gets its own per screenshot.
    this.browser ??= import('playwright-core').then(({ chromium }) =>
      chromium.launch({
        executablePath: CHROMIUM,
        env: this.options.env ?? {},
        // WebRTC may not send UDP around the proxy that keeps loopback pages on loopback.
        args: [
          '--no-sandbox',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-gpu',
          '--no-proxy-server',
          '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
          ...(this.options.extraArgs ?? []),
        ],
      }),
    );
    return this.browser;
  }

  /** A proxy address that refuses every connection, held open so nothing else can listen there. */
  async refusingProxy(): Promise<string> {
    this.refusing ??= new Promise((resolve, reject) => {
      const server = createServer((socket) => socket.destroy()).once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server)).unref();
    });
    return `http://127.0.0.1:${((await this.refusing).address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    const [browser, refusing] = [this.browser, this.refusing];
    this.browser = undefined;
    this.refusing = undefined;
    if (browser) await (await browser).close();
    if (refusing) (await refusing).close();
  }
}

export interface Picture {
  image: Buffer;
  contentType: 'image/png' | 'image/jpeg';
}

/** One screenshot of a whole page: PNG, or JPEG at falling quality when the PNG is over maxBytes. */
async function fitPicture(page: Page, maxBytes: number): Promise<Picture> {
  const png = await page.screenshot({ type: 'png', fullPage: true });
  if (png.length <= maxBytes) return { image: png, contentType: 'image/png' };
  for (const quality of [85, 60, 40]) {
    const jpeg = await page.screenshot({ type: 'jpeg', quality, fullPage: true });
    if (jpeg.length <= maxBytes) return { image: jpeg, contentType: 'image/jpeg' };
  }
  throw new Error(`a diff page does not fit in ${maxBytes} bytes`);
}

/**
 * Draws HTML pages (diff-html.ts) DIFF_LAYOUT.width CSS px wide and as tall as their content, with
 * JavaScript off and no network: the pages are made of the diff, which the agent wrote.
 */
export async function renderPages(
  browsers: Browsers,
  pages: string[],
  maxBytes: number = LIMITS.mediaBytes,
): Promise<Picture[]> {
  const context = await (
    await browsers.get()
  ).newContext({
    viewport: { width: DIFF_LAYOUT.width, height: 40 },
    deviceScaleFactor: DIFF_LAYOUT.scale,
    javaScriptEnabled: false,
    offline: true,
  });
  try {
    const pictures: Picture[] = [];
    for (const html of pages) {
      const page = await context.newPage();
      await page.setContent(html, { waitUntil: 'load', timeout: 30_000 });
      pictures.push(await fitPicture(page, maxBytes));
      await page.close();
    }
    return pictures;
  } finally {
    await context.close();
  }
}

/**
 * A page on loopback (the policy lets the agent open it without asking) may load only loopback
 * addresses: network requests elsewhere are aborted (route interception), and what routing does
 * not see (redirects, WebSockets, workers) meets a proxy that refuses it, which loopback bypasses.
 * A page elsewhere was approved on the phone (or allowed by the operator) and loads what it likes.
 */
async function screenshotContext(browsers: Browsers, url: string): Promise<BrowserContext> {
  const browser = await browsers.get();
  const page = { viewport: { width: 430, height: 932 }, deviceScaleFactor: 2 };
  if (!isLoopbackUrl(url)) return browser.newContext(page);
  const context = await browser.newContext({
    ...page,
    serviceWorkers: 'block',
    proxy: { server: await browsers.refusingProxy(), bypass: LOOPBACK_HOSTS.join(',') },
  });
  await context.route(
    () => true,
    (route) => {
      const target = new URL(route.request().url());
      const network = /^(https?|wss?):$/.test(target.protocol);
      return !network || isLoopbackHost(target.hostname) ? route.continue() : route.abort('blockedbyclient');
    },
  );
  return context;
}

/** Captures a URL as JPEG, lowering quality then size until it fits maxBytes. */
export async function captureScreenshot(
  browsers: Browsers,
  url: string,
  fullPage = false,
  maxBytes = MAX_SCREENSHOT_BYTES,
): Promise<Buffer> {
  if (!/^https?:\/\//.test(url)) throw new Error('the screenshot tool takes an http(s) URL');
  const context = await screenshotContext(browsers, url);
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load', timeout: 30_000 }).catch((error: unknown) => {
      const note = isLoopbackUrl(url)
        ? " (a page on this machine may load only this machine's addresses; a redirect elsewhere is refused)"
        : '';
      throw new Error(`${(error as Error).message.split('\n')[0]}${note}`, { cause: error });
    });
    for (const [quality, scale] of [
      [80, 1],
      [60, 1],
      [45, 1],
      [45, 0.6],
      [35, 0.4],
    ] as const) {
      if (scale !== 1)
        await page.setViewportSize({ width: Math.round(430 * scale * 2) / 2, height: Math.round(932 * scale) });
      const image = await page.screenshot({
        type: 'jpeg',
        quality,
        fullPage: fullPage && scale === 1,
        scale: scale === 1 ? 'device' : 'css',
      });
      if (image.length <= maxBytes) return image;
    }
    throw new Error(`the page does not fit in ${maxBytes} bytes even at low quality`);
  } finally {
    await context.close();
  }
}
