// Pictures for the phone: the rendered diff (HTML → PNG) and page screenshots (JPEG ≤ 600 KB),
// both through playwright-core driving Debian's Chromium.
import { createServer, type AddressInfo, type Server } from 'node:net';
import type { Browser, BrowserContext } from 'playwright-core';
import { isLoopbackHost, isLoopbackUrl, LOOPBACK_HOSTS } from './loopback.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const MAX_SCREENSHOT_BYTES = 600 * 1024;
/** The diff picture shows at most this many lines of the diff; the review says how many more there are. */
export const MAX_DIFF_LINES = 120;
/** Longer lines wrap up to this many characters, then end with a count of the characters left out. */
const MAX_LINE_CHARS = 400;

export interface BrowserOptions {
  /** Extra Chromium flags (tests map a made-up host name to 127.0.0.1 with --host-resolver-rules). */
  extraArgs?: string[];
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
    this.browser ??= import('playwright-core').then(({ chromium }) => chromium.launch({
      executablePath: CHROMIUM,
      // WebRTC may not send UDP around the proxy that keeps loopback pages on loopback.
      args: [
        '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-gpu', '--no-proxy-server',
        '--force-webrtc-ip-handling-policy=disable_non_proxied_udp', ...this.options.extraArgs ?? [],
      ],
    }));
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

const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** How many of a diff's lines the picture shows. */
export const diffLinesInImage = (totalLines: number) => Math.min(totalLines, MAX_DIFF_LINES);

const lineClass = (line: string) => line.startsWith('diff --git') ? 'file'
  : line.startsWith('+++') || line.startsWith('---') || line.startsWith('index ') || line.startsWith('new file') || line.startsWith('deleted file') ? 'meta'
    : line.startsWith('@@') ? 'hunk' : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : 'ctx';

function row(line: string): string {
  const cls = lineClass(line);
  const text = cls === 'file' ? line.replace(/^diff --git a\/(\S+) b\/.*$/, '$1') : line;
  const cut = text.length > MAX_LINE_CHARS ? ` … (${text.length - MAX_LINE_CHARS} more characters on this line)` : '';
  return `<div class="${cls}">${escape(text.slice(0, MAX_LINE_CHARS)) || '&nbsp;'}${cut ? `<span class="cut">${escape(cut)}</span>` : ''}</div>`;
}

/** A phone-sized HTML page for the first lines of a unified diff (already redacted); says at top and bottom what it leaves out. */
export function diffHtml(diff: string, title: string): string {
  const lines = diff.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const shown = diffLinesInImage(lines.length);
  const hidden = lines.length - shown;
  const note = hidden > 0 ? `<div class="cut">The picture shows lines 1–${shown} of ${lines.length}: ${hidden} more lines are not shown.</div>` : '';
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#0d1117;color:#c9d1d9;font:15px/1.35 'DejaVu Sans Mono',monospace;width:720px}
h1{font:bold 18px 'DejaVu Sans',sans-serif;margin:0;padding:12px 14px;background:#161b22;color:#f0f6fc}
main{padding:6px 0}div{white-space:pre-wrap;word-break:break-all;padding:0 14px}
.file{background:#1f6feb33;color:#f0f6fc;font-weight:bold;margin-top:8px;padding:4px 14px}
.meta{color:#8b949e}.hunk{color:#a5d6ff;background:#388bfd1a}.add{background:#2ea04333;color:#aff5b4}.del{background:#f8514933;color:#ffdcd7}
.cut{color:#f0b72f;font-weight:bold}div.cut{padding:6px 14px;font-family:'DejaVu Sans',sans-serif}
</style></head><body><h1>${escape(title)}</h1>${note}<main>${lines.slice(0, shown).map(row).join('')}</main>${note}</body></html>`;
}

export async function renderDiffImage(browsers: Browsers, diff: string, title: string): Promise<Buffer> {
  const page = await (await browsers.get()).newPage({ viewport: { width: 720, height: 400 }, deviceScaleFactor: 1.5 });
  try {
    await page.setContent(diffHtml(diff, title), { waitUntil: 'load' });
    return await page.screenshot({ type: 'png', fullPage: true });
  } finally {
    await page.close();
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
    ...page, serviceWorkers: 'block', proxy: { server: await browsers.refusingProxy(), bypass: LOOPBACK_HOSTS.join(',') },
  });
  await context.route(() => true, (route) => {
    const target = new URL(route.request().url());
    const network = /^(https?|wss?):$/.test(target.protocol);
    return !network || isLoopbackHost(target.hostname) ? route.continue() : route.abort('blockedbyclient');
  });
  return context;
}

/** Captures a URL as JPEG, lowering quality then size until it fits maxBytes. */
export async function captureScreenshot(browsers: Browsers, url: string, fullPage = false, maxBytes = MAX_SCREENSHOT_BYTES): Promise<Buffer> {
  if (!/^https?:\/\//.test(url)) throw new Error('the screenshot tool takes an http(s) URL');
  const context = await screenshotContext(browsers, url);
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load', timeout: 30_000 }).catch((error: unknown) => {
      const note = isLoopbackUrl(url) ? ' (a page on this machine may load only this machine\'s addresses; a redirect elsewhere is refused)' : '';
      throw new Error(`${(error as Error).message.split('\n')[0]}${note}`, { cause: error });
    });
    for (const [quality, scale] of [[80, 1], [60, 1], [45, 1], [45, 0.6], [35, 0.4]] as const) {
      if (scale !== 1) await page.setViewportSize({ width: Math.round(430 * scale * 2) / 2, height: Math.round(932 * scale) });
      const image = await page.screenshot({ type: 'jpeg', quality, fullPage: fullPage && scale === 1, scale: scale === 1 ? 'device' : 'css' });
      if (image.length <= maxBytes) return image;
    }
    throw new Error(`the page does not fit in ${maxBytes} bytes even at low quality`);
  } finally {
    await context.close();
  }
}
