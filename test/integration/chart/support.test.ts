/** The test support itself: helm extraction and object validation must be able to fail. */
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { deflateRawSync, crc32 } from 'node:zlib';
import { extractZipEntry, helmBinary, renderChart, findOne, webhookObjects, type K8sObject } from '../../support/helm';
import { validateObject } from './validate';

/** A one-entry zip (deflate), built by hand: local header, data, central directory, end record. */
function makeZip(name: string, content: Buffer): Buffer {
  const data = deflateRawSync(content);
  const nameBuf = Buffer.from(name);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(crc32(content), 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(nameBuf.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc32(content), 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(nameBuf.length, 28);
  central.writeUInt32LE(0, 42);
  const cdOffset = local.length + nameBuf.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBuf.length, 12);
  end.writeUInt32LE(cdOffset, 16);
  return Buffer.concat([local, nameBuf, data, central, nameBuf, end]);
}

describe('zip extraction', () => {
  const content = Buffer.from('#!/bin/sh\necho helm\n'.repeat(50));

  test('extracts a deflated entry', () => {
    expect(extractZipEntry(makeZip('helm/helm', content), 'helm/helm').equals(content)).toBe(true);
  });

  test('refuses a missing entry, a corrupt entry and a non-zip', () => {
    const zip = makeZip('helm/helm', content);
    expect(() => extractZipEntry(zip, 'kubectl/kubectl')).toThrow('not found');
    const corrupt = Buffer.from(zip);
    corrupt[40] = corrupt[40]! ^ 0xff; // inside the deflated data
    expect(() => extractZipEntry(corrupt, 'helm/helm')).toThrow();
    expect(() => extractZipEntry(Buffer.from('not a zip at all, not even close'), 'helm/helm')).toThrow('not a zip');
  });
});

test('helmBinary extracts once into node_modules/.cache and reuses it', () => {
  const first = helmBinary();
  expect(first).toContain(join('node_modules', '.cache', 'drainguard-helm'));
  const { mtimeMs, mode } = statSync(first);
  expect(mode & 0o111).toBe(0o111);
  expect(helmBinary()).toBe(first);
  expect(statSync(first).mtimeMs).toBe(mtimeMs);
  expect(readFileSync(first).subarray(0, 4).toString('latin1')).toBe('\x7fELF');
  expect(dirname(first)).toMatch(/drainguard-helm\/\d+\.\d+\.\d+$/);
});

describe('validation rejects broken objects', () => {
  const objects = renderChart({ set: { 'tls.mode': 'certManager', 'metrics.serviceMonitor.enabled': true } });
  const clone = <T>(o: T): T => structuredClone(o);

  test('a built-in kind with a wrong type', async () => {
    const d = clone(findOne(webhookObjects(objects), 'Deployment')) as K8sObject & { spec: { replicas: unknown } };
    d.spec.replicas = 'two';
    expect(await validateObject(d)).toEqual([expect.stringContaining('replicas')]);
  });

  test('a webhook without a required field', async () => {
    const w = clone(findOne(webhookObjects(objects), 'MutatingWebhookConfiguration')) as K8sObject & { webhooks: { sideEffects?: string }[] };
    delete w.webhooks[0]!.sideEffects;
    expect(await validateObject(w)).toEqual([expect.stringContaining('sideEffects')]);
  });

  test('a cert-manager Certificate with a misspelt field or no issuer', async () => {
    const c = clone(findOne(webhookObjects(objects), 'Certificate', 'drainguard-serving')) as K8sObject & { spec: Record<string, unknown> };
    expect(await validateObject(c)).toEqual([]);
    c.spec.dnsName = c.spec.dnsNames;
    delete c.spec.issuerRef;
    const errors = await validateObject(c);
    expect(errors.join('\n')).toMatch(/additional properties/);
    expect(errors.join('\n')).toMatch(/issuerRef/);
  });

  test('an Issuer with two issuer types', async () => {
    const i = clone(objects.find((o) => o.kind === 'Issuer')!) as K8sObject & { spec: Record<string, unknown> };
    i.spec.ca = { secretName: 'x' };
    i.spec.selfSigned = {};
    expect((await validateObject(i)).length).toBeGreaterThan(0);
  });

  test('a ServiceMonitor with an unknown scheme', async () => {
    const s = clone(findOne(webhookObjects(objects), 'ServiceMonitor')) as K8sObject & { spec: { endpoints: { scheme: string }[] } };
    s.spec.endpoints[0]!.scheme = 'ftp';
    expect((await validateObject(s)).length).toBeGreaterThan(0);
  });

  test('an unknown kind', async () => {
    expect(await validateObject({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      expect.stringContaining('no validator'),
    ]);
  });
});
