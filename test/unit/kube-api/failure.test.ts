/**
 * What the lean client makes of an answer it did not expect (src/kube-api/failure.ts): the Status's
 * message in the failure's text, and its causes' types, which tell a namespace being deleted apart
 * from any other 403.
 */
import { answerFailure, ApiFailure, readStatus } from '../../../src/kube-api/failure';

/** kube-apiserver's answer to a create in a namespace being deleted (NamespaceLifecycle admission). */
const TERMINATING = JSON.stringify({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message: 'events "envoy-1.17d" is forbidden: unable to create new content in namespace edge because it is being terminated',
  reason: 'Forbidden',
  details: { name: 'envoy-1.17d', kind: 'events', causes: [{ reason: 'NamespaceTerminating', message: 'namespace edge is being terminated', field: 'metadata.namespace' }] },
  code: 403,
});

/** An RBAC refusal: a 403 without causes. */
const RBAC = JSON.stringify({ kind: 'Status', status: 'Failure', message: 'events is forbidden: User "x" cannot create resource "events"', reason: 'Forbidden', details: { kind: 'events' }, code: 403 });

test.each([
  ['a create in a namespace being deleted', 403, TERMINATING, true, ['NamespaceTerminating']],
  ['an RBAC refusal', 403, RBAC, false, []],
  ['the cause on another status (not a refusal to create)', 409, TERMINATING, false, ['NamespaceTerminating']],
  ['a body that is not JSON', 403, '<html>forbidden</html>', false, []],
  ['causes that are not a list', 403, JSON.stringify({ details: { causes: { reason: 'NamespaceTerminating' } } }), false, []],
  // Go's StatusCause.Type is `reason` in JSON: a `type` field is not it.
  ['a cause named by `type` instead of `reason`', 403, JSON.stringify({ details: { causes: [{ type: 'NamespaceTerminating' }] } }), false, []],
  ['causes without a type, or not objects', 403, JSON.stringify({ details: { causes: [null, 7, { reason: 7 }, {}, { reason: 'FieldValueInvalid' }] } }), false, ['FieldValueInvalid']],
])('%s: namespaceTerminating %s', (_what, status, text, terminating, causeTypes) => {
  const failure = answerFailure('create event edge/envoy-1.17d', { status, text });
  expect(failure).toBeInstanceOf(ApiFailure);
  expect(failure.status).toBe(status);
  expect(failure.causeTypes).toEqual(causeTypes);
  expect(failure.namespaceTerminating).toBe(terminating);
});

test("the Status's message goes into the failure's text; a body without one adds nothing", () => {
  expect(answerFailure('create event edge/e', { status: 403, text: TERMINATING }).message).toBe(
    'create event edge/e: HTTP 403 (events "envoy-1.17d" is forbidden: unable to create new content in namespace edge because it is being terminated)',
  );
  expect(answerFailure('create event edge/e', { status: 502, text: 'bad gateway' }).message).toBe('create event edge/e: HTTP 502');
  expect(readStatus('null')).toEqual({ message: '', causeTypes: [] });
});

test('a failure without an answer has no causes', () => {
  const failure = new ApiFailure('GET /api: connection reset', undefined, { cause: new Error('ECONNRESET') });
  expect(failure.causeTypes).toEqual([]);
  expect(failure.namespaceTerminating).toBe(false);
  expect(failure.maybeApplied).toBe(true);
});
