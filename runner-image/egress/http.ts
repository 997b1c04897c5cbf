// The supervisor's own HTTP calls through the egress proxy: Node's http.Agent takes a proxy of its
// own (`proxyEnv`, no process-wide NODE_USE_ENV_PROXY), sends the URL's credential as
// Proxy-Authorization: Basic, tunnels https with CONNECT and sends http in absolute form; an empty
// NO_PROXY sends loopback through it too.
import { Agent as HttpAgent, request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export interface ProxyAgents {
  http: HttpAgent;
  https: HttpsAgent;
}

/** Agents that send every request through `proxyUrl` (credential included). */
export function proxyAgents(proxyUrl: string): ProxyAgents {
  const proxyEnv = { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, NO_PROXY: '' };
  return { http: new HttpAgent({ keepAlive: true, proxyEnv }), https: new HttpsAgent({ keepAlive: true, proxyEnv }) };
}

export const agentFor = (agents: ProxyAgents, url: URL): HttpAgent | HttpsAgent =>
  url.protocol === 'https:' ? agents.https : agents.http;

export interface TextRequest {
  method: string;
  headers: OutgoingHttpHeaders;
  body?: string;
  signal: AbortSignal;
}

/** One request through the proxy; the answer's status and whole body as text. */
export function sendText(
  agents: ProxyAgents,
  target: string,
  init: TextRequest,
): Promise<{ status: number; ok: boolean; text: string }> {
  const url = new URL(target);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, {
      method: init.method,
      headers: init.headers,
      agent: agentFor(agents, url),
      signal: init.signal,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        resolve({ status, ok: status >= 200 && status < 300, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(init.body);
  });
}
