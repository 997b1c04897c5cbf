// The controller's start-up check of the installed Session CRD: which answers let it run, and the
// message that stops it (both schema versions and the fix).
import { describe, expect, it } from 'vitest';
import { sessionSchemaVersion } from '../../common/session/crd.ts';
import { TETHER_VERSION, crdVersionProblem } from '../../controller/crd-version.ts';

const own = sessionSchemaVersion();

describe('crdVersionProblem', () => {
  it("lets the controller run only when the CRD carries the controller's own schema version", () => {
    expect(crdVersionProblem({ state: 'found', schemaVersion: own })).toBeUndefined();
    expect(crdVersionProblem({ state: 'found', schemaVersion: own.toUpperCase() })).toBeDefined();
  });

  it('names both versions and the two ways to fix it when they differ', () => {
    const problem = crdVersionProblem({ state: 'found', schemaVersion: '0123456789abcdef' })!;
    expect(problem).toContain('has schema version 0123456789abcdef');
    expect(problem).toContain(`this controller (Tether ${TETHER_VERSION}) needs schema version ${own}`);
    expect(problem).toContain('`helm upgrade` with crds.install=true');
    expect(problem).toContain('`kubectl apply --server-side -f crds/sessions.tether.dev.yaml`');
  });

  it("says an older Tether's CRD (no annotation) is one, and a missing or unreadable CRD what it is", () => {
    expect(crdVersionProblem({ state: 'found', schemaVersion: undefined })).toMatch(
      /schema version none \(no tether\.dev\/schema-version annotation: an older Tether's CRD\)/,
    );
    expect(crdVersionProblem({ state: 'missing' })).toMatch(
      /^the Session CRD sessions\.tether\.dev is not installed;.*helm upgrade/,
    );
    expect(crdVersionProblem({ state: 'forbidden' })).toMatch(
      /may not read the Session CRD .*get on customresourcedefinitions\/sessions\.tether\.dev/,
    );
  });
});
