// The install's people map (TETHER_PEOPLE): which person a phone is, for the Session's requester
// (commits, the pull request body, its reviewer), and what the person may do: which repositories
// (`repos`, none given → all of them) and whether *merge* is theirs. Without the map every phone
// may use every repository, and *merge* is the install's decision alone (github.merge).
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { Requester, type Requester as RequesterT } from '../../common/session/forge-schema.ts';
import { REPO_NAME_MAX_LENGTH, REPO_NAME_PATTERN } from '../../common/session/names.ts';
import { E164_PATTERN } from '../../common/session/patterns.ts';

const Person = Type.Object(
  {
    phone: Type.String({ pattern: E164_PATTERN }),
    ...Requester.properties,
    // It becomes a Co-authored-by trailer: no line breaks, no angle brackets.
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[^<>\\r\\n]+$' }),
    repos: Type.Optional(
      Type.Array(Type.String({ maxLength: REPO_NAME_MAX_LENGTH, pattern: REPO_NAME_PATTERN }), { maxItems: 50 }),
    ),
    merge: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
const PEOPLE = Type.Array(Person, { maxItems: 1000 });

export type Person = Static<typeof Person>;

/**
 * The map from TETHER_PEOPLE's JSON; `repoNames`: the install's repositories, which every `repos`
 * entry must name. Throws a plain message (for ConfigError).
 */
export function parsePeople(json: string, repoNames: readonly string[]): Person[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error('is not JSON: expected [{"phone":"+14155550123","name":"Ada","github":"ada","merge":true}, …]');
  }
  const error = Value.Errors(PEOPLE, parsed).First();
  if (error) throw new Error(`entry ${error.path || '(the list)'}: ${error.message}`);
  const people = parsed as Person[];
  const phones = new Set<string>();
  for (const person of people) {
    if (phones.has(person.phone)) throw new Error(`the phone ${person.phone.slice(0, 6)}… is given twice`);
    phones.add(person.phone);
    const unknown = person.repos?.find((r) => !repoNames.includes(r));
    if (unknown !== undefined)
      throw new Error(`"${unknown}" is not one of the install's repositories (${repoNames.join(', ')})`);
  }
  return people;
}

export class People {
  private readonly byPhone: ReadonlyMap<string, Person>;
  /** whether a map was given: then merge is only for people it allows */
  private readonly given: boolean;

  constructor(people?: readonly Person[]) {
    this.given = people !== undefined;
    this.byPhone = new Map((people ?? []).map((p) => [p.phone, p]));
  }

  /** The Session's spec.requester for the phone, when the map names it. */
  requester(phone: string): RequesterT | undefined {
    const person = this.byPhone.get(phone);
    if (!person) return undefined;
    return {
      name: person.name,
      ...(person.email ? { email: person.email } : {}),
      ...(person.github ? { github: person.github } : {}),
    };
  }

  /** The repositories the phone may use, or undefined: all of them. */
  repos(phone: string): readonly string[] | undefined {
    return this.byPhone.get(phone)?.repos;
  }

  mayUse(phone: string, repoName: string): boolean {
    return this.repos(phone)?.includes(repoName) ?? true;
  }

  mayMerge(phone: string): boolean {
    return !this.given || this.byPhone.get(phone)?.merge === true;
  }
}
