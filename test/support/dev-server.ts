// A dev server the agent starts on its Pod's loopback from a Bash step, as a user runs `npm run dev &`:
// the supervisor's Chromium shares that loopback (one network per Pod, as in a cluster).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Writes the server into `folder` (an agentFolder) and returns the shell lines that start it in the background on
 * `port` and wait until it answers. Each request's method and path is appended to ../served.log (beside the checkout,
 * in the workspace), and `connection` for each connection (a browser refusing a certificate sends no request). With
 * `tls` (PEM files the agent may read) it serves https.
 */
export function devServerLines(
  folder: string,
  port: number,
  page: string,
  tls?: { key: string; cert: string },
): string[] {
  const server = join(folder, 'dev-server.js');
  const create = tls
    ? `require('node:https').createServer({ key: fs.readFileSync(${JSON.stringify(tls.key)}), ` +
      `cert: fs.readFileSync(${JSON.stringify(tls.cert)}) }, `
    : "require('node:http').createServer(";
  writeFileSync(
    server,
    "const fs = require('node:fs');\n" +
      `${create}(req, res) => {\n` +
      "  fs.appendFileSync('../served.log', `${req.method} ${req.url}\\n`);\n" +
      "  res.setHeader('content-type', 'text/html');\n" +
      `  res.end(${JSON.stringify(page)});\n` +
      "}).on('connection', () => fs.appendFileSync('../served.log', 'connection\\n'))\n" +
      `  .listen(${port});\n`,
    { mode: 0o644 },
  );
  return [
    `setsid nohup node ${server} > ../dev-server.out 2>&1 < /dev/null &`,
    `for i in $(seq 100); do curl -sk -o /dev/null --noproxy '*' ${tls ? 'https' : 'http'}://127.0.0.1:${port}/ready ` +
      '&& break; sleep 0.1; done',
  ];
}
