// A tiny fake of the GitHub REST API: records pull-request creations (POST /repos/:owner/:repo/pulls).
// Given a token, it answers 401 to any request without it, as GitHub does: an agent's process on the
// same machine cannot open pull requests in the runners' name. It answers nothing but its own number.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedPull {
  owner: string;
  repo: string;
  number: number;
  title: string;
  head: string;
  base: string;
  body: string;
  html_url: string;
  headers: IncomingHttpHeaders;
}

export interface FakeGitHub {
  /** Base URL to use as GITHUB_API_URL. */
  url: string;
  pulls: RecordedPull[];
  /** Makes the next n pull-request creations fail with this status. */
  failNext(status: number, n?: number): void;
  close(): Promise<void>;
}

export interface FakeGitHubOptions {
  /** The token pull requests must carry (Authorization: Bearer); any request is taken when absent. */
  token?: string;
}

export async function startFakeGitHub(options: FakeGitHubOptions = {}): Promise<FakeGitHub> {
  const pulls: RecordedPull[] = [];
  let failures: { status: number; left: number } = { status: 0, left: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (options.token && req.headers.authorization !== `Bearer ${options.token}`)
        return send(401, { message: 'Bad credentials' });
      const match = /^\/repos\/([^/]+)\/([^/]+)\/pulls$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !match) return send(404, { message: 'Not Found' });
      if (failures.left > 0) {
        failures.left -= 1;
        return send(failures.status, { message: 'injected failure' });
      }
      let input: Record<string, unknown>;
      try {
        input = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        return send(400, { message: 'Problems parsing JSON' });
      }
      const missing = ['title', 'head', 'base'].filter((k) => typeof input[k] !== 'string' || !input[k]);
      if (missing.length)
        return send(422, {
          message: 'Validation Failed',
          errors: missing.map((field) => ({ field, code: 'missing_field' })),
        });
      const [owner, repo] = [decodeURIComponent(match[1]!), decodeURIComponent(match[2]!)];
      const number = pulls.length + 1;
      const pull: RecordedPull = {
        owner,
        repo,
        number,
        title: String(input.title),
        head: String(input.head),
        base: String(input.base),
        body: String(input.body ?? ''),
        html_url: `https://github.example/${owner}/${repo}/pull/${number}`,
        headers: req.headers,
      };
      pulls.push(pull);
      send(201, { number, html_url: pull.html_url, state: 'open', head: { ref: pull.head }, base: { ref: pull.base } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    pulls,
    failNext(status, n = 1) {
      failures = { status, left: n };
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
