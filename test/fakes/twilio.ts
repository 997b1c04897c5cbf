// A local fake of Twilio's Messages API (POST /2010-04-01/Accounts/{sid}/Messages.json) and the
// Content API (/v1/Content, twilio-content.ts), enough for the official SDK: checks Basic auth,
// records each message per recipient (a ContentSid message as the phone shows it), can fail sends.
// It also keeps media the phone "sent" as Twilio does: an authenticated GET of
// /2010-04-01/Accounts/{sid}/Messages/{MessageSid}/Media/{MediaSid} redirects (307) to a
// short-lived URL on loopback that serves the bytes without authentication.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ContentError, ContentStore, type ContentResource, type FakeButton } from './twilio-content.ts';

export interface FakeMessage {
  sid: string;
  accountSid: string;
  from: string;
  /** recipient as sent (whatsapp:+1…) */
  to: string;
  /** the text the phone shows (a ContentSid message: its body, variables filled in) */
  body: string;
  /** quick-reply buttons the phone shows (title and the id a tap sends back as ButtonPayload) */
  buttons?: FakeButton[];
  mediaUrls: string[];
  contentSid?: string;
  contentVariables?: string;
  at: number;
}

export interface FakeTwilio {
  url: string;
  accountSid: string;
  authToken: string;
  /** Content API resources created so far */
  contents: ContentResource[];
  /** WhatsApp's verdict on a template submitted for approval (submitted ones start as "received") */
  decideApproval(sid: string, status: 'approved' | 'rejected'): void;
  /** every accepted message, in arrival order */
  messages: FakeMessage[];
  /** accepted messages to one number (E.164 or whatsapp:E.164) */
  to(phone: string): FakeMessage[];
  /** number of POSTs received, failed ones included */
  attempts: number;
  /** the next `count` sends answer `status` (default 500) with Twilio's error body */
  failNext(count?: number, status?: number, code?: number): void;
  /** resolves when `count` messages to `phone` have arrived */
  waitFor(phone: string, count: number, timeoutMs?: number): Promise<FakeMessage[]>;
  onMessage(listener: (message: FakeMessage) => void): void;
  /** Keeps media of an inbound message; returns the webhook's NumMedia/MediaUrl{N}/MediaContentType{N} fields. */
  inboundMedia(messageSid: string, items: InboundMediaItem[]): Record<string, string>;
  /** every request for media (the Media resource and the short-lived URL), in order */
  mediaRequests: MediaRequest[];
  /** the next `count` Media resource GETs answer 404, as Twilio does while media propagates */
  failMediaNext(count: number): void;
  close(): Promise<void>;
}

export interface InboundMediaItem {
  bytes: Buffer;
  /** MediaContentType{N}; may differ from the bytes (a hostile or mistaken sender) */
  contentType: string;
}

export interface MediaRequest {
  path: string;
  authorization?: string;
  status: number;
}

/** How long the redirect target of a media fetch is valid (Twilio's is hours; short here). */
const MEDIA_LINK_TTL_MS = 60_000;

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let data = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (data += chunk));
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });

export async function startFakeTwilio(options: { accountSid?: string; authToken?: string } = {}): Promise<FakeTwilio> {
  const accountSid = options.accountSid ?? `AC${randomBytes(16).toString('hex')}`;
  const authToken = options.authToken ?? randomBytes(16).toString('hex');
  const messages: FakeMessage[] = [];
  const listeners: Array<(m: FakeMessage) => void> = [];
  let failures: { count: number; status: number; code: number } = { count: 0, status: 500, code: 20500 };
  let attempts = 0;
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  let url = '';

  const media = new Map<string, InboundMediaItem>();
  const links = new Map<string, { key: string; until: number }>();
  const mediaRequests: MediaRequest[] = [];
  let mediaFailures = 0;
  /** GETs of media: the authenticated Media resource (→ 307) and the short-lived link (→ bytes). */
  const serveMedia = (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = req.url ?? '';
    const resource = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/([^/]+)\/Media\/([^/?]+)$/.exec(path);
    const link = /^\/_media\/([0-9a-f]{32})(\?.*)?$/.exec(path);
    if (req.method !== 'GET' || (!resource && !link)) return false;
    const answer = (status: number, headers: Record<string, string | number> = {}, body?: Buffer) => {
      mediaRequests.push({ path, authorization: req.headers.authorization, status });
      res.writeHead(status, headers).end(body);
    };
    if (resource) {
      const key = `${resource[2]}/${resource[3]}`;
      if (req.headers.authorization !== expectedAuth || resource[1] !== accountSid) answer(401);
      else if (mediaFailures > 0 || !media.has(key)) {
        mediaFailures = Math.max(0, mediaFailures - 1);
        answer(404);
      } else {
        const token = randomBytes(16).toString('hex');
        links.set(token, { key, until: Date.now() + MEDIA_LINK_TTL_MS });
        answer(307, {
          Location: `${url}/_media/${token}?Expires=${Math.floor((Date.now() + MEDIA_LINK_TTL_MS) / 1000)}`,
        });
      }
      return true;
    }
    const target = links.get(link![1]!);
    const item = target && target.until > Date.now() ? media.get(target.key) : undefined;
    if (item) answer(200, { 'Content-Type': item.contentType, 'Content-Length': item.bytes.length }, item.bytes);
    else answer(403);
    return true;
  };

  const contents = new ContentStore(accountSid);

  const server = createServer((req, res) => {
    if (serveMedia(req, res)) return;
    void readBody(req).then(
      (raw) => {
        const reply = (status: number, body: object) =>
          res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
        const url = new URL(req.url ?? '/', 'http://fake');
        if (url.pathname.startsWith('/v1/Content')) {
          if (req.headers.authorization !== expectedAuth)
            return reply(401, { code: 20003, message: 'Authenticate', status: 401 });
          return contentRoute(contents, req.method ?? '', url, raw, reply);
        }
        const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(url.pathname);
        if (req.method !== 'POST' || !match) return reply(404, { code: 20404, message: 'not found', status: 404 });
        attempts++;
        if (req.headers.authorization !== expectedAuth || match[1] !== accountSid) {
          return reply(401, { code: 20003, message: 'Authenticate', status: 401 });
        }
        if (failures.count > 0) {
          failures = { ...failures, count: failures.count - 1 };
          return reply(failures.status, { code: failures.code, message: 'Injected failure', status: failures.status });
        }
        const form = new URLSearchParams(raw);
        let body = form.get('Body') ?? '';
        let buttons: FakeButton[] | undefined;
        if (form.get('ContentSid')) {
          try {
            ({ body, buttons } = contents.render(form.get('ContentSid')!, form.get('ContentVariables')));
          } catch (error) {
            if (!(error instanceof ContentError)) throw error;
            return reply(400, { code: error.code, message: error.message, status: 400 });
          }
        }
        if (body.length > 1600)
          return reply(400, {
            code: 21617,
            message: 'The concatenated message body exceeds the 1600 character limit',
            status: 400,
          });
        if (!form.get('To') || !form.get('From'))
          return reply(400, { code: 21604, message: 'A To and From are required', status: 400 });
        const message: FakeMessage = {
          sid: `SM${randomBytes(16).toString('hex')}`,
          accountSid,
          from: form.get('From')!,
          to: form.get('To')!,
          body,
          ...(buttons ? { buttons } : {}),
          mediaUrls: form.getAll('MediaUrl'),
          contentSid: form.get('ContentSid') ?? undefined,
          contentVariables: form.get('ContentVariables') ?? undefined,
          at: Date.now(),
        };
        messages.push(message);
        for (const listener of listeners) listener(message);
        reply(201, {
          sid: message.sid,
          account_sid: accountSid,
          to: message.to,
          from: message.from,
          body,
          status: 'queued',
          num_media: String(message.mediaUrls.length),
        });
      },
      (error: unknown) => res.writeHead(500).end(String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const norm = (phone: string) => (phone.startsWith('whatsapp:') ? phone : `whatsapp:${phone}`);
  const to = (phone: string) => messages.filter((m) => m.to === norm(phone));

  return {
    url,
    accountSid,
    authToken,
    messages,
    to,
    mediaRequests,
    contents: contents.resources,
    decideApproval: (sid, status) => contents.decide(sid, status),
    get attempts() {
      return attempts;
    },
    inboundMedia(messageSid, items) {
      const fields: Record<string, string> = { NumMedia: String(items.length) };
      items.forEach((item, i) => {
        const mediaSid = `ME${randomBytes(16).toString('hex')}`;
        media.set(`${messageSid}/${mediaSid}`, item);
        fields[`MediaUrl${i}`] = `${url}/2010-04-01/Accounts/${accountSid}/Messages/${messageSid}/Media/${mediaSid}`;
        fields[`MediaContentType${i}`] = item.contentType;
      });
      return fields;
    },
    failMediaNext(count) {
      mediaFailures = count;
    },
    failNext(count = 1, status = 500, code = 20500) {
      failures = { count, status, code };
    },
    onMessage(listener) {
      listeners.push(listener);
    },
    waitFor(phone, count, timeoutMs = 4_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (to(phone).length < count) return false;
          clearTimeout(timer);
          resolve(to(phone));
          return true;
        };
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `expected ${count} messages to ${phone}, got ${to(phone).length}: ` +
                  `${JSON.stringify(to(phone).map((m) => m.body))}`,
              ),
            ),
          timeoutMs,
        );
        if (!check()) listeners.push(() => void check());
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Reply = (status: number, body: object) => void;

/** POST /v1/Content (create), GET /v1/Content (list), GET /v1/Content/{sid} (fetch). */
function contentRoute(contents: ContentStore, method: string, url: URL, raw: string, reply: Reply): void {
  const approval = /^\/v1\/Content\/(HX[0-9a-f]{32})\/ApprovalRequests(\/whatsapp)?$/.exec(url.pathname);
  if (approval) {
    try {
      if (method === 'POST' && approval[2]) return reply(201, contents.requestApproval(approval[1]!, JSON.parse(raw)));
      if (method === 'GET' && !approval[2]) return reply(200, contents.approvalOf(approval[1]!));
      return reply(405, { code: 20004, message: 'Method not allowed', status: 405 });
    } catch (error) {
      if (!(error instanceof ContentError) && !(error instanceof SyntaxError)) throw error;
      const status = error instanceof ContentError && error.code === 20404 ? 404 : 400;
      return reply(status, {
        code: error instanceof ContentError ? error.code : 20001,
        message: error.message,
        status,
      });
    }
  }
  const sid = /^\/v1\/Content\/(HX[0-9a-f]{32})$/.exec(url.pathname)?.[1];
  if (method === 'GET' && sid) {
    const found = contents.get(sid);
    return found
      ? reply(200, found)
      : reply(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
  }
  if (url.pathname !== '/v1/Content') return reply(404, { code: 20404, message: 'not found', status: 404 });
  if (method === 'GET') return reply(200, contents.page(url.searchParams));
  if (method !== 'POST') return reply(405, { code: 20004, message: 'Method not allowed', status: 405 });
  try {
    reply(201, contents.create(JSON.parse(raw)));
  } catch (error) {
    if (error instanceof SyntaxError) return reply(400, { code: 20001, message: 'body is not JSON', status: 400 });
    if (!(error instanceof ContentError)) throw error;
    reply(400, { code: error.code, message: error.message, status: 400 });
  }
}
