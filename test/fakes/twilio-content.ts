// The part of a fake Twilio that holds Content API resources (content.twilio.com/v1/Content), per
// Twilio's documentation: create (POST, JSON), list (GET, paged with PageSize/PageToken, key
// "contents"), fetch (GET /v1/Content/{sid}); and renders a message sent with ContentSid and
// ContentVariables into what the phone shows: the body and the buttons, variables substituted.
// WhatsApp approval: POST /v1/Content/{sid}/ApprovalRequests/whatsapp submits (refused at once when
// the body breaks WhatsApp's variable rules), GET /v1/Content/{sid}/ApprovalRequests reads the
// verdict; a test plays WhatsApp with decide().
import { randomBytes } from 'node:crypto';

export interface FakeButton {
  title: string;
  id: string;
}

export interface ContentResource {
  sid: string;
  account_sid: string;
  friendly_name: string | null;
  language: string;
  variables: Record<string, string>;
  types: Record<string, { body?: string; actions?: Array<{ title: string; id?: string; type?: string }> }>;
  url: string;
  date_created: string;
  date_updated: string;
}

/** Twilio's documented limits for the types the fake knows. */
export const CONTENT_LIMITS = {
  textBody: 1600,
  quickReplyBody: 1024,
  quickReplyActions: 10,
  sessionButtons: 3,
  title: 20,
  id: 200,
};

export class ContentError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

const PLACEHOLDER = /\{\{\s*([^}\s]+)\s*\}\}/g;
const placeholders = (text: string) => [...text.matchAll(PLACEHOLDER)].map((m) => m[1]!);
const KNOWN_TYPES = new Set(['twilio/text', 'twilio/quick-reply']);

/** Checks a create request as Twilio would; returns the stored resource. */
function checkDefinition(
  raw: unknown,
): Omit<ContentResource, 'sid' | 'account_sid' | 'url' | 'date_created' | 'date_updated'> {
  const def = (raw ?? {}) as Partial<ContentResource>;
  if (typeof def.language !== 'string' || !def.language) throw new ContentError(20001, 'language is required');
  if (!def.types || typeof def.types !== 'object' || !Object.keys(def.types).length)
    throw new ContentError(20001, 'types is required');
  const variables = def.variables ?? {};
  for (const [key, value] of Object.entries(variables)) {
    if (typeof value !== 'string' || !value) throw new ContentError(20001, `variable ${key} needs a sample value`);
  }
  for (const [type, body] of Object.entries(def.types)) {
    if (!KNOWN_TYPES.has(type)) throw new ContentError(20001, `the fake does not know content type ${type}`);
    const texts = [body.body ?? '', ...(body.actions ?? []).flatMap((a) => [a.title, a.id ?? ''])];
    for (const name of texts.flatMap(placeholders)) {
      if (!(name in variables)) throw new ContentError(20001, `variable {{${name}}} has no sample value in variables`);
    }
    if (typeof body.body !== 'string' || !body.body) throw new ContentError(20001, `${type}: body is required`);
    if (type === 'twilio/text' && body.body.length > CONTENT_LIMITS.textBody)
      throw new ContentError(20001, 'twilio/text: body over 1,600 characters');
    if (type === 'twilio/quick-reply')
      checkQuickReply(body as { body: string; actions?: FakeButton[] }, CONTENT_LIMITS.quickReplyActions);
  }
  return { friendly_name: def.friendly_name ?? null, language: def.language, variables, types: def.types };
}

function checkQuickReply(qr: { body: string; actions?: FakeButton[] }, maxActions: number): void {
  if (qr.body.length > CONTENT_LIMITS.quickReplyBody)
    throw new ContentError(20001, `twilio/quick-reply: body over ${CONTENT_LIMITS.quickReplyBody} characters`);
  const actions = qr.actions ?? [];
  if (actions.length < 1 || actions.length > maxActions)
    throw new ContentError(20001, `twilio/quick-reply: ${actions.length} actions (1 to ${maxActions})`);
  const titles = new Set<string>();
  for (const a of actions) {
    if (typeof a.title !== 'string' || !a.title || a.title.length > CONTENT_LIMITS.title)
      throw new ContentError(20001, `button title "${a.title}" empty or over ${CONTENT_LIMITS.title} characters`);
    if (titles.has(a.title)) throw new ContentError(20001, `button title "${a.title}" appears twice`);
    titles.add(a.title);
    if (a.id !== undefined && a.id.length > CONTENT_LIMITS.id)
      throw new ContentError(20001, `button id over ${CONTENT_LIMITS.id} characters`);
  }
}

export interface Approval {
  name: string;
  category: string;
  content_type: string;
  status: 'received' | 'pending' | 'approved' | 'rejected';
  rejection_reason: string;
  allow_category_change: boolean;
}

const CATEGORIES = new Set(['UTILITY', 'MARKETING', 'AUTHENTICATION']);

/** WhatsApp refuses a body that starts or ends with a variable, or has two side by side. */
function whatsappBodyProblem(body: string): string | undefined {
  const trimmed = body.trim();
  if (/^\{\{[^}]+\}\}/.test(trimmed) || /\{\{[^}]+\}\}$/.test(trimmed))
    return 'the body starts or ends with a variable';
  if (/\}\}\s*\{\{/.test(trimmed)) return 'two variables are next to each other';
  return undefined;
}

export class ContentStore {
  readonly resources: ContentResource[] = [];
  readonly approvals = new Map<string, Approval>();
  private readonly accountSid: string;

  constructor(accountSid: string) {
    this.accountSid = accountSid;
  }

  create(raw: unknown): ContentResource {
    const checked = checkDefinition(raw);
    const sid = `HX${randomBytes(16).toString('hex')}`;
    const now = new Date().toISOString();
    const resource: ContentResource = {
      ...checked,
      sid,
      account_sid: this.accountSid,
      url: `https://content.twilio.com/v1/Content/${sid}`,
      date_created: now,
      date_updated: now,
    };
    this.resources.push(resource);
    return resource;
  }

  get(sid: string): ContentResource | undefined {
    return this.resources.find((r) => r.sid === sid);
  }

  /** POST …/ApprovalRequests/whatsapp */
  requestApproval(sid: string, raw: unknown): Approval {
    const resource = this.get(sid);
    if (!resource) throw new ContentError(20404, 'The requested resource was not found');
    const request = (raw ?? {}) as { name?: unknown; category?: unknown };
    if (typeof request.name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(request.name))
      throw new ContentError(20001, 'name: lowercase letters, digits and underscores');
    if (typeof request.category !== 'string' || !CATEGORIES.has(request.category))
      throw new ContentError(20001, 'category: UTILITY, MARKETING or AUTHENTICATION');
    const [type, body] = Object.entries(resource.types)[0]!;
    const problem = whatsappBodyProblem(body.body ?? '');
    const approval: Approval = {
      name: request.name,
      category: request.category,
      content_type: type,
      status: problem ? 'rejected' : 'received',
      rejection_reason: problem ?? '',
      allow_category_change: true,
    };
    this.approvals.set(sid, approval);
    return approval;
  }

  /** GET …/ApprovalRequests */
  approvalOf(sid: string): object {
    if (!this.get(sid)) throw new ContentError(20404, 'The requested resource was not found');
    const whatsapp = this.approvals.get(sid) ?? { status: 'unsubmitted' };
    return {
      sid,
      account_sid: this.accountSid,
      whatsapp: { type: 'whatsapp', ...whatsapp },
      url: `https://content.twilio.com/v1/Content/${sid}/ApprovalRequests`,
    };
  }

  /** WhatsApp's verdict on a submitted template. */
  decide(sid: string, status: 'approved' | 'rejected'): void {
    const approval = this.approvals.get(sid);
    if (!approval) throw new Error(`${sid} was never submitted for approval`);
    approval.status = status;
  }

  /** One page of the list, as GET /v1/Content answers it. */
  page(search: URLSearchParams): object {
    const size = Math.min(1000, Math.max(1, Number(search.get('PageSize') ?? 50) || 50));
    const start = Number(search.get('PageToken') ?? 0) || 0;
    const contents = this.resources.slice(start, start + size);
    const base = 'https://content.twilio.com/v1/Content';
    const more = start + size < this.resources.length;
    return {
      contents,
      meta: {
        page: Math.floor(start / size),
        page_size: size,
        key: 'contents',
        url: `${base}?PageSize=${size}&PageToken=${start}`,
        first_page_url: `${base}?PageSize=${size}`,
        previous_page_url: null,
        next_page_url: more ? `${base}?PageSize=${size}&PageToken=${start + size}` : null,
      },
    };
  }

  /** What the phone shows for a message sent with this resource and these variables (JSON text). */
  render(sid: string, variablesJson: string | null): { body: string; buttons?: FakeButton[] } {
    const resource = this.get(sid);
    if (!resource) throw new ContentError(21655, 'The ContentSid is Invalid');
    let given: Record<string, unknown>;
    try {
      given = variablesJson ? (JSON.parse(variablesJson) as Record<string, unknown>) : {};
    } catch {
      throw new ContentError(21656, 'The ContentVariables Parameter is invalid');
    }
    const fill = (text: string) =>
      text.replace(PLACEHOLDER, (_m, name: string) => {
        const value = given[name];
        if (typeof value !== 'string') throw new ContentError(21656, `ContentVariables lacks variable ${name}`);
        return value;
      });
    const quickReply = resource.types['twilio/quick-reply'];
    if (quickReply) {
      const rendered = {
        body: fill(quickReply.body!),
        actions: (quickReply.actions ?? []).map((a) => ({ title: fill(a.title), id: fill(a.id ?? a.title) })),
      };
      checkQuickReply(rendered, CONTENT_LIMITS.sessionButtons);
      return { body: rendered.body, buttons: rendered.actions };
    }
    const body = fill(resource.types['twilio/text']!.body!);
    if (body.length > CONTENT_LIMITS.textBody)
      throw new ContentError(21617, 'The concatenated message body exceeds the 1600 character limit');
    return { body };
  }
}
