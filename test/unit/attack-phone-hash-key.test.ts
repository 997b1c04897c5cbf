// An independent attack on the phone hash key's life in the chart: the relay and the controller
// must always hash with the same key, or the controller refuses every Session the relay names.
import { beforeAll, describe, expect, it } from 'vitest';
import { HELM_SETUP_TIMEOUT, find, helmBin, podTemplate, render } from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const BASE = { relay: { publicUrl: 'https://tether.example.com' } };
const withKey = (phoneHashKey: string) => ({ ...BASE, secrets: { relay: { phoneHashKey } } });
const templateOf = async (component: string, phoneHashKey: string) =>
  JSON.stringify(podTemplate(find(await render(withKey(phoneHashKey)), 'Deployment', `-${component}`)));

describe('a new phone hash key restarts both of its holders', () => {
  it.each(['relay', 'controller'])('the %s Pod template changes with the key', async (component) => {
    const before = await templateOf(component, 'a'.repeat(48));
    const after = await templateOf(component, 'b'.repeat(48));
    expect(after).not.toBe(before);
  });
});
