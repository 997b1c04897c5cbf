// WhatsApp buttons need a Content resource (Twilio's Content API). The relay makes the few it
// needs itself — one twilio/quick-reply per button count, everything in it a variable — and finds
// them again by friendly_name after a restart, so restarts and replicas do not multiply them.
// Outside the 24-hour window only WhatsApp-approved templates may be sent, and their button
// titles are fixed: for each set of keyword replies (approve/reject, allow/allow always/deny…)
// the relay makes one, asks WhatsApp to approve it, and uses it once approved; the ids stay
// variables, so a tap still names its request.
import type { Logger } from 'pino';
import type twilio from 'twilio';
import { MAX_BUTTONS } from '../chat/buttons.ts';

type Client = ReturnType<typeof twilio>;

/** Bump when a template's shape changes: a new name makes new resources, the old ones stay unused. */
const VERSION = 'v1';
export const quickReplyName = (buttons: number) => `tether_quick_reply_${buttons}_${VERSION}`;

/**
 * The quick-reply resource for `buttons` buttons. Variable 1 is the body; button k's title is
 * variable 2k, its id (the payload a tap sends back) variable 2k+1 — allowed in session messages.
 */
export function quickReplyDefinition(buttons: number) {
  const variables: Record<string, string> = { 1: 'Waiting for your decision' };
  const actions = Array.from({ length: buttons }, (_, i) => {
    variables[2 * i + 2] = `Option ${i + 1}`;
    variables[2 * i + 3] = `option${i + 1}:request-0`;
    return { title: `{{${2 * i + 2}}}`, id: `{{${2 * i + 3}}}` };
  });
  return {
    friendly_name: quickReplyName(buttons),
    language: 'en',
    variables,
    types: { 'twilio/quick-reply': { body: '{{1}}', actions } },
  };
}

export const decisionName = (titles: string[]) =>
  `tether_decision_${titles.join('_').replace(/[^a-z0-9]+/g, '_')}_${VERSION}`;

/** Fixed titles, a body that neither starts nor ends with its variable (WhatsApp's rule), the ids variables 2…n+1. */
export function decisionDefinition(titles: string[]) {
  const variables: Record<string, string> = { 1: 'the agent wants to run npm test' };
  const actions = titles.map((title, i) => {
    variables[i + 2] = `${title}:request-0`;
    return { title, id: `{{${i + 2}}}` };
  });
  const body = 'Tether is waiting for your decision: {{1}}\nTap a button, or reply in words.';
  return {
    friendly_name: decisionName(titles),
    language: 'en',
    variables,
    types: { 'twilio/quick-reply': { body, actions } },
  };
}

/** How often a template not yet approved is asked about again. */
const APPROVAL_RECHECK_MS = 10 * 60_000;

/** The variables that fill a quick-reply resource for one message. */
export function quickReplyVariables(
  body: string,
  buttons: Array<{ title: string; id: string }>,
): Record<string, string> {
  const variables: Record<string, string> = { 1: body };
  buttons.forEach((b, i) => {
    variables[2 * i + 2] = b.title;
    variables[2 * i + 3] = b.id;
  });
  return variables;
}

export class ContentTemplates {
  private readonly client: Client;
  private readonly logger: Logger;
  /** friendly_name → SID; a failed look-up is forgotten so the next message tries again */
  private readonly sids = new Map<string, Promise<string>>();
  private existing: Promise<Map<string, string>> | undefined;
  /** decision template SID → approved, or when to ask again */
  private readonly approvals = new Map<string, true | number>();

  private readonly now: () => number;

  constructor(client: Client, logger: Logger, now: () => number = Date.now) {
    this.client = client;
    this.logger = logger;
    this.now = now;
  }

  /** The SID of the quick-reply resource with `buttons` buttons, made on first use. */
  quickReply(buttons: number): Promise<string> {
    if (!Number.isInteger(buttons) || buttons < 1 || buttons > MAX_BUTTONS)
      throw new RangeError(`no quick reply with ${buttons} buttons`);
    return this.sidOf(quickReplyName(buttons), () => quickReplyDefinition(buttons));
  }

  /**
   * The approved template for a request whose replies have these fixed titles, or undefined while
   * WhatsApp has not approved it (the first call makes it and asks for approval).
   */
  async decision(titles: string[]): Promise<string | undefined> {
    const name = decisionName(titles);
    const sid = await this.sidOf(name, () => decisionDefinition(titles));
    return (await this.approved(sid, name)) ? sid : undefined;
  }

  /** The resource named `name`: cached, else found by name, else made. */
  private sidOf(name: string, definition: () => object): Promise<string> {
    let sid = this.sids.get(name);
    if (!sid) {
      sid = this.findOrCreate(name, definition);
      this.sids.set(name, sid);
      sid.catch(() => this.sids.delete(name));
    }
    return sid;
  }

  /** Asks WhatsApp's verdict (at most every APPROVAL_RECHECK_MS until approved); submits a template never submitted. */
  private async approved(sid: string, name: string): Promise<boolean> {
    const known = this.approvals.get(sid);
    if (known === true) return true;
    if (known !== undefined && this.now() < known) return false;
    const content = this.client.content.v1.contents(sid);
    let status = ((await content.approvalFetch().fetch()).whatsapp as { status?: string } | undefined)?.status;
    if (!status || status === 'unsubmitted') {
      status = (await content.approvalCreate.create({ name, category: 'UTILITY' })).status;
      this.logger.info({ friendlyName: name, sid }, 'content template sent to WhatsApp for approval');
    }
    this.approvals.set(sid, status === 'approved' ? true : this.now() + APPROVAL_RECHECK_MS);
    if (status !== 'approved')
      this.logger.warn(
        { sid, status },
        'decision template not approved by WhatsApp (yet): the plain template goes instead',
      );
    return status === 'approved';
  }

  private async findOrCreate(name: string, definition: () => object): Promise<string> {
    const existing = await this.listExisting();
    const found = existing.get(name);
    if (found) return found;
    // The SDK sends this object as the JSON body, in the API's own (snake_case) field names.
    const created = await this.client.content.v1.contents.create(definition() as never);
    existing.set(name, created.sid);
    this.logger.info({ friendlyName: name, sid: created.sid }, 'content template created');
    return created.sid;
  }

  /** Every resource of the account once (names of ours → SID); looked up again after a failure. */
  private listExisting(): Promise<Map<string, string>> {
    if (!this.existing) {
      this.existing = this.client.content.v1.contents
        .list({ pageSize: 500 })
        .then(
          (all) =>
            new Map(all.filter((c) => c.friendlyName?.startsWith('tether_')).map((c) => [c.friendlyName, c.sid])),
        );
      this.existing.catch(() => (this.existing = undefined));
    }
    return this.existing;
  }
}
