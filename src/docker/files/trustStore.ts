/**
 * A sandbox with credentials trusts its own CA beside its image's trust store: the store is read
 * from the image (where its distribution keeps it) and both go into the work area's tls folder,
 * which is laid out again after every start (a tmpfs).
 */
import type { Readable } from 'node:stream';
import type Dockerode from 'dockerode';
import { extract } from 'tar-stream';
import { statusCode, withDeadline } from '../engine';
import type { ArchiveEntry } from './archive';

/** Where distributions keep their PEM bundle: Debian, Ubuntu, Alpine and Arch; Fedora and RHEL; openSUSE; others. */
const STORES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem', '/etc/ssl/ca-bundle.pem', '/etc/ssl/cert.pem'];
const MAX_STORE_BYTES = 4 * 1024 * 1024;

/** The image's trust store (PEM), or '' when it has none of the usual ones. */
export async function imageTrustStore(container: Dockerode.Container, deadlineMs: number): Promise<string> {
  for (const at of STORES) {
    try {
      const text = await withDeadline(regularFile(container, at), deadlineMs, 'read the image trust store');
      if (text !== undefined) return text;
    } catch (e) {
      if (statusCode(e) !== 404) throw e;
    }
  }
  return '';
}

async function regularFile(container: Dockerode.Container, at: string): Promise<string | undefined> {
  const archive = (await container.getArchive({ path: at })) as unknown as Readable;
  const ex = extract();
  let text: string | undefined;
  await new Promise<void>((resolve, reject) => {
    ex.on('entry', (header, body, next) => {
      const chunks: Buffer[] = [];
      const keep = text === undefined && header.type === 'file' && (header.size ?? 0) <= MAX_STORE_BYTES;
      body.on('data', (c: unknown) => {
        if (keep) chunks.push(c as Buffer);
      });
      body.on('end', () => {
        if (keep) text = Buffer.concat(chunks).toString('utf8');
        next();
      });
    });
    ex.on('finish', resolve);
    ex.on('error', reject);
    archive.on('error', reject);
    archive.pipe(ex);
  });
  return text;
}

/** The tls folder's entries (relative to the work area): the CA alone, and the CA after the image's store. */
export function trustEntries(store: string, ca: string): ArchiveEntry[] {
  const bundle = `${store}${store === '' || store.endsWith('\n') ? '' : '\n'}${ca}`;
  return [
    { type: 'directory', name: 'tls', mode: 0o755 },
    { type: 'file', name: 'tls/ca.pem', content: Buffer.from(ca), mode: 0o644 },
    { type: 'file', name: 'tls/ca-bundle.pem', content: Buffer.from(bundle), mode: 0o644 },
  ];
}
