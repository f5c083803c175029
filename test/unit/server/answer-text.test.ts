/** The answer's text is exactly JSON.stringify of the decision's body, however the patch is put in. */
import fc from 'fast-check';
import type { AdmissionDecision } from '../../../src/admission';
import { answerText } from '../../../src/server/decide-body';

const anyText = fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom('"patch":""', '","patch":"', '\\"patch\\":\\"\\"', 'a"b\\c\u2028'));

const answer = fc.record(
  {
    apiVersion: fc.constantFrom('admission.k8s.io/v1' as const, 'admission.k8s.io/v1beta1' as const),
    uid: anyText,
    allowed: fc.boolean(),
    patch: fc.option(fc.uint8Array({ maxLength: 3000 }).map((bytes) => Buffer.from(bytes).toString('base64')), { nil: undefined }),
    warnings: fc.option(fc.array(anyText, { maxLength: 3 }), { nil: undefined }),
    status: fc.option(fc.record({ code: fc.constant(403), message: anyText }), { nil: undefined }),
  },
  { requiredKeys: ['apiVersion', 'uid', 'allowed'] },
);

test('property: answerText(body) === JSON.stringify(body) for answers with and without a patch, and for errors', () => {
  fc.assert(
    fc.property(answer, ({ apiVersion, uid, allowed, patch, warnings, status }) => {
      const body: AdmissionDecision['body'] = {
        apiVersion,
        kind: 'AdmissionReview',
        response: {
          uid,
          allowed,
          ...(patch !== undefined ? { patchType: 'JSONPatch' as const, patch } : {}),
          ...(warnings !== undefined ? { warnings } : {}),
          ...(status !== undefined ? { status } : {}),
        },
      };
      expect(answerText(body)).toBe(JSON.stringify(body));
    }),
    { numRuns: 500 },
  );
  fc.assert(fc.property(anyText, (error) => expect(answerText({ error })).toBe(JSON.stringify({ error }))));
});
