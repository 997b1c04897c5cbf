// The people map (TETHER_PEOPLE) and the pull-request settings as the relay reads them: a bad map
// stops start-up naming the variable; a good one gives each phone its requester and rights.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../relay/config.ts';
import { People } from '../../relay/inbound/people.ts';

const base = {
  PUBLIC_URL: 'https://tether.example.com/',
  TETHER_REPO_URL: 'https://github.com/acme/web.git',
  TETHER_REPOS: '[{"name":"docs","url":"https://github.com/acme/docs.git"}]',
  RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(32),
  TETHER_PHONE_HASH_KEY: 'h'.repeat(32),
  RELAY_WEB_CHAT_TOKEN: 't'.repeat(20),
};
const ada = { phone: '+14155550123', name: 'Ada L', email: 'ada@example.com', github: 'ada-l', repos: ['docs'] };
const people = (list: unknown) => loadConfig({ ...base, TETHER_PEOPLE: JSON.stringify(list) }).people;
const refusal = (value: string) => {
  try {
    loadConfig({ ...base, TETHER_PEOPLE: value });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('accepted');
};

describe('TETHER_PEOPLE', () => {
  it('is read into requesters and rights; absent, every phone may use everything and merge', () => {
    const map = new People(people([ada, { phone: '+14155550124', name: 'Bo', merge: true }]));
    expect(map.requester(ada.phone)).toEqual({ name: 'Ada L', email: 'ada@example.com', github: 'ada-l' });
    expect([map.mayUse(ada.phone, 'web'), map.mayUse(ada.phone, 'docs')]).toEqual([false, true]);
    expect([map.mayMerge(ada.phone), map.mayMerge('+14155550124'), map.mayMerge('+14155550199')]).toEqual([
      false,
      true,
      false,
    ]);
    const none = new People(loadConfig(base).people);
    expect([none.requester(ada.phone), none.mayUse(ada.phone, 'web'), none.mayMerge(ada.phone)]).toEqual([
      undefined,
      true,
      true,
    ]);
    expect(loadConfig(base).pullRequestsConfigMap).toBe('tether-pull-requests');
  });

  it('refuses bad JSON, unknown fields, a repository the install lacks, a phone given twice', () => {
    expect(refusal('[{')).toMatch(/^TETHER_PEOPLE.*is not JSON/);
    expect(refusal(JSON.stringify([{ ...ada, admin: true }]))).toMatch(/^TETHER_PEOPLE/);
    expect(refusal(JSON.stringify([{ ...ada, phone: '4155550123' }]))).toMatch(/^TETHER_PEOPLE.*\/0\/phone/);
    expect(refusal(JSON.stringify([{ ...ada, github: 'bad login!' }]))).toMatch(/\/0\/github/);
    expect(refusal(JSON.stringify([{ ...ada, name: 'Ada\nCo-authored-by: X <x@evil>' }]))).toMatch(/\/0\/name/);
    expect(refusal(JSON.stringify([{ ...ada, repos: ['api'] }]))).toMatch(/"api" is not one of the install's/);
    expect(refusal(JSON.stringify([ada, ada]))).toMatch(/given twice/);
    expect(refusal(JSON.stringify([ada, ada]))).not.toContain('550123');
  });
});
