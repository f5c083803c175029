import fc from 'fast-check';
import { isMap, stringify } from 'yaml';
import { DocumentPatcher } from '../../../src/cli/yaml-splice';
import { parseYamlStream } from '../../../src/cli/yaml-stream';
import { podViewOf } from '../../../src/cli/yaml-patch';
import { mutate } from '../../../src/mutate';
import { validPodCase } from '../../support/generators/pod-arbitrary';
import { unjustifiedChanges } from './changed-lines';

/** The core's real patches on generated pods, written in assorted block styles: always spliced, never noisy. */

const style = fc.record({
  indentSeq: fc.boolean(),
  indent: fc.constantFrom(2, 4),
  crlf: fc.boolean(),
});

test('every patch of the core is spliced into block-style YAML, changing only lines whose values change, and idempotently', () => {
  fc.assert(
    fc.property(validPodCase, style, ({ pod, config }, { indentSeq, indent, crlf }) => {
      let text = stringify(pod, { version: '1.1', indentSeq, indent, lineWidth: 0, aliasDuplicateObjects: false });
      if (crlf) text = text.replaceAll('\n', '\r\n');
      const [streamDocument] = parseYamlStream(text, 'pod.yaml');
      const root = streamDocument!.document.contents;
      if (!isMap(root)) throw new Error('a pod is a map');
      const result = mutate(podViewOf(streamDocument!.document, root), config);
      if (result.patch.length === 0) return;

      const patcher = new DocumentPatcher(streamDocument!);
      patcher.apply(root, result.patch);
      const printed = patcher.print();
      expect(printed.fallbackReason).toBeNull();
      expect(unjustifiedChanges(text, printed.text)).toEqual([]);
      if (crlf) expect(printed.text.replaceAll('\r\n', '')).not.toContain('\n');

      const [again] = parseYamlStream(printed.text, 'pod.yaml');
      expect(mutate(podViewOf(again!.document, again!.document.contents as typeof root), config).patch).toEqual([]);
    }),
    { numRuns: 200 },
  );
});
