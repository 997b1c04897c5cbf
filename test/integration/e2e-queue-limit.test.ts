// End to end with a queue limit set through the chart: helm renders charts/tether with
// `sessions.maxQueued: 2`; the relay and the controller of the local stack get what that value
// changes in their ConfigMaps. The relay refuses the third queued command, saying "2", and the
// controller runs the two it queued.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { find, helmBin, render, type KubeObject } from '../unit/chart-render.ts';

const LIMIT = 2;
const NUMBER = '+14155550143';
type Component = 'relay' | 'controller';

const data = (objects: KubeObject[], component: Component) =>
  (find(objects, 'ConfigMap', `-${component}`) as unknown as { data: Record<string, string> }).data;

/** The variables of each component's ConfigMap that `values` changes from the chart's defaults. */
async function chartEnvChange(values: object): Promise<Record<Component, Record<string, string>>> {
  const [defaults, changed] = await Promise.all([render({}), render(values)]);
  const change = (component: Component) => {
    const before = data(defaults, component);
    return Object.fromEntries(
      Object.entries(data(changed, component)).filter(([name, value]) => before[name] !== value),
    );
  };
  return { relay: change('relay'), controller: change('controller') };
}

let e2e: E2E;
let env: Record<Component, Record<string, string>>;
beforeAll(async () => {
  helmBin();
  env = await chartEnvChange({ sessions: { maxQueued: LIMIT } });
  e2e = await startE2E({ numbers: [NUMBER], relayEnv: env.relay, controllerEnv: env.controller });
}, 900_000);
afterAll(async () => e2e?.stop());

describe("end to end: the queue limit from the chart's values", () => {
  it('reaches the relay and the controller alike', () => {
    expect(env).toEqual({
      relay: { TETHER_MAX_QUEUED: String(LIMIT) },
      controller: { TETHER_MAX_QUEUED: String(LIMIT) },
    });
  });

  it('refuses the command after the limit, says the limit, and runs the queued ones', async () => {
    const phone = e2e.phone(NUMBER);
    await phone.send('script:\nprogress: first started\nsleep: 4000\nsay: first done');
    await phone.next(/first started/);
    for (let n = 2; n <= LIMIT + 1; n++) {
      await phone.send(`script:\nsay: command ${n} done`);
      expect((await phone.next(/Queued|waiting/)).body).toBe(
        `Queued (#${n}). It starts when the current task finishes. *cancel* stops all of them.`,
      );
    }
    await phone.send('script:\nsay: one too many');
    expect((await phone.next(/Queued|waiting/)).body).toBe(
      `You already have ${LIMIT} commands waiting. Wait for one to finish, or reply *cancel* to clear them.`,
    );

    await phone.next(/^✅[^]*first done/);
    for (let n = 2; n <= LIMIT + 1; n++) await phone.next(new RegExp(`^✅[^]*command ${n} done`));
    const sessions = (await e2e.list()).filter((s) => s.spec.phone === NUMBER);
    expect(sessions.map((s) => [s.spec.prompt.split('\n')[1], s.status?.phase])).toEqual([
      ['progress: first started', 'Succeeded'],
      ['say: command 2 done', 'Succeeded'],
      ['say: command 3 done', 'Succeeded'],
    ]);
    expect(phone.received().filter((m) => /one too many/.test(m.body))).toEqual([]);
  });
});
