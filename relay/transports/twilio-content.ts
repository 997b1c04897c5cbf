// WhatsApp buttons need a Content resource (Twilio's Content API). The relay makes the few it
// needs itself — one twilio/quick-reply per button count, everything in it a variable — and finds
// them again by friendly_name after a restart, so restarts and replicas do not multiply them.
import type { Logger } from 'pino';
import type twilio from 'twilio';
import { MAX_BUTTONS } from '../outbound/buttons.ts';

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
  return { friendly_name: quickReplyName(buttons), language: 'en', variables, types: { 'twilio/quick-reply': { body: '{{1}}', actions } } };
}

/** The variables that fill a quick-reply resource for one message. */
export function quickReplyVariables(body: string, buttons: Array<{ title: string; id: string }>): Record<string, string> {
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

  constructor(client: Client, logger: Logger) {
    this.client = client;
    this.logger = logger;
  }

  /** The SID of the quick-reply resource with `buttons` buttons, made on first use. */
  quickReply(buttons: number): Promise<string> {
    if (!Number.isInteger(buttons) || buttons < 1 || buttons > MAX_BUTTONS) throw new RangeError(`no quick reply with ${buttons} buttons`);
    const name = quickReplyName(buttons);
    let sid = this.sids.get(name);
    if (!sid) {
      sid = this.findOrCreate(name, () => quickReplyDefinition(buttons));
      this.sids.set(name, sid);
      sid.catch(() => this.sids.delete(name));
    }
    return sid;
  }

  private async findOrCreate(name: string, definition: () => object): Promise<string> {
    const found = (await this.listExisting()).get(name);
    if (found) return found;
    // The SDK sends this object as the JSON body, in the API's own (snake_case) field names.
    const created = await this.client.content.v1.contents.create(definition() as never);
    this.logger.info({ friendlyName: name, sid: created.sid }, 'content template created');
    return created.sid;
  }

  /** Every resource of the account once (names of ours → SID); looked up again after a failure. */
  private listExisting(): Promise<Map<string, string>> {
    if (!this.existing) {
      this.existing = this.client.content.v1.contents.list({ pageSize: 500 }).then(
        (all) => new Map(all.filter((c) => c.friendlyName?.startsWith('tether_')).map((c) => [c.friendlyName, c.sid])),
      );
      this.existing.catch(() => (this.existing = undefined));
    }
    return this.existing;
  }
}
