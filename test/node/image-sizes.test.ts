// Image size budgets, read from the engine: what a node pulls before the first Session can start.
// Sizes are docker's (bytes, MB = 10^6). On a machine that reaches no registry the base image is the
// stand-in of scripts/ensure-base-image.sh: its Debian part is Debian's slim layout (within a few MB
// of debian:bookworm-slim) and its Node part is the official one, minus corepack and yarn. The
// controller and relay drop all of those, so they measure what users get; the runner keeps the
// base's Node tools, so corepack and yarn of the official image are added to its measured size.
import { beforeAll, describe, expect, it } from 'vitest';
import { docker, imageName, requireImage, type Component } from '../support/images.ts';

const MB = 1_000_000;
const BUDGET: Record<Component, number> = { controller: 250 * MB, relay: 250 * MB, runner: 1310 * MB };
/** corepack and yarn in the official node:24-bookworm-slim, absent from the stand-in. */
const OFFICIAL_ONLY_NODE_TOOLS = 8 * MB;

const size = (image: string) => Number(docker(['image', 'inspect', '--format', '{{.Size}}', image]).stdout.trim());
const baseIsStandIn = () =>
  docker([
    'image',
    'inspect',
    '--format',
    '{{index .Config.Labels "dev.tether.stand-in"}}',
    'node:24-bookworm-slim',
  ]).stdout.trim() !== '';
/** The largest layers, for the failure message: what to look at first. */
const largestLayers = (image: string) =>
  docker(['history', '--no-trunc', '--format', '{{.Size}}\t{{.CreatedBy}}', image])
    .stdout.split('\n')
    .filter((l) => l && !l.startsWith('0B'))
    .map((l) => l.slice(0, 160))
    .slice(0, 6)
    .join('\n');

describe.each<Component>(['controller', 'relay', 'runner'])('the %s image', (component) => {
  beforeAll(() => requireImage(component));

  it('fits its size budget', () => {
    const measured = size(imageName(component));
    const extra = component === 'runner' && baseIsStandIn() ? OFFICIAL_ONLY_NODE_TOOLS : 0;
    expect(measured).toBeGreaterThan(100 * MB);
    expect(
      measured + extra,
      `${imageName(component)} is ${Math.round(measured / MB)} MB; largest ` +
        `layers:\n${largestLayers(imageName(component))}`,
    ).toBeLessThanOrEqual(BUDGET[component]);
  });
});
