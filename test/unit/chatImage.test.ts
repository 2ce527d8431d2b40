import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { extract, pack, type Header } from 'tar-stream';
import { CHAT_PTH_LINE, CHAT_SITE, ChatSiteTooLarge, chatDockerfile, distributionOf, repackSite, userSitePackages } from '../../src/docker/images/chatImage';
import { preparedNote } from '../../src/docker/pool/chatImages';

type Entry = { header: Partial<Header> & { name: string }; body?: string };

/** The engine's archive of the user site, as a tar of `entries`. */
function archiveOf(entries: Entry[]): Readable {
  const p = pack();
  for (const e of entries) {
    if (e.body === undefined) p.entry({ mode: 0o644, ...e.header });
    else p.entry({ mode: 0o644, ...e.header }, Buffer.from(e.body));
  }
  p.finalize();
  return p as unknown as Readable;
}

/** What repackSite wrote: each entry's name, type, mode, owner and body or link. */
async function repacked(entries: Entry[], maxBytes?: number): Promise<{ found: string[]; out: string[] }> {
  const out = pack();
  const read: string[] = [];
  const ex = extract();
  ex.on('entry', (h, body, next) => {
    const chunks: Buffer[] = [];
    body.on('data', (c: unknown) => chunks.push(c as Buffer));
    body.on('end', () => {
      read.push(`${h.name} ${h.type} ${(h.mode ?? 0).toString(8)} ${h.uid}:${h.gid}${h.linkname ? ` -> ${h.linkname}` : ''}${chunks.length ? ` ${Buffer.concat(chunks).toString()}` : ''}`);
      next();
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    ex.on('finish', resolve);
    ex.on('error', reject);
  });
  (out as unknown as Readable).pipe(ex);
  const found = await repackSite(archiveOf(entries), out, maxBytes);
  out.finalize();
  await done;
  return { found, out: read };
}

describe('a chat prepared image: its build context and sentences', () => {
  it('finds the user site of a sandbox Python by its version, and nothing for a version that is not one', () => {
    assert.equal(userSitePackages('3.11.2'), '/sandbox/home/.local/lib/python3.11/site-packages');
    assert.equal(userSitePackages('3.13'), '/sandbox/home/.local/lib/python3.13/site-packages');
    assert.equal(userSitePackages('3.11.2/../../etc'), undefined);
    assert.equal(userSitePackages(undefined), undefined);
  });

  it('reads a distribution from its dist-info folder name only', () => {
    assert.equal(distributionOf('requests-2.32.3.dist-info'), 'requests 2.32.3');
    assert.equal(distributionOf('codeact_demo_net-1.0.0.dist-info'), 'codeact_demo_net 1.0.0');
    assert.equal(distributionOf('requests'), undefined);
    assert.equal(distributionOf('x"y-1.dist-info'), undefined);
    assert.equal(distributionOf('a-1 2.dist-info'), undefined);
  });

  it('copies folders, files and links under site/, owned by root without set-id bits, and leaves out every other kind and name', async () => {
    const { found, out } = await repacked([
      { header: { name: 'site-packages/', type: 'directory', mode: 0o700 } },
      { header: { name: 'site-packages/pkg/', type: 'directory', mode: 0o777, uid: 65534, gid: 65534 } },
      { header: { name: 'site-packages/pkg/__init__.py', mode: 0o4777, uid: 65534 }, body: 'x = 1' },
      { header: { name: 'site-packages/pkg/empty.py' }, body: '' },
      { header: { name: 'site-packages/pkg-1.0.dist-info/', type: 'directory' } },
      { header: { name: 'site-packages/link', type: 'symlink', linkname: '/etc/shadow' } },
      { header: { name: 'site-packages/../../escape.py' }, body: 'no' },
      { header: { name: 'site-packages/./dot.py' }, body: 'no' },
      { header: { name: 'site-packages/hard', type: 'link', linkname: 'site-packages/pkg/__init__.py' } },
      { header: { name: 'site-packages/fifo', type: 'fifo' } },
      { header: { name: 'site-packages/dev', type: 'character-device' } },
    ]);
    assert.deepEqual(found, ['pkg 1.0']);
    assert.deepEqual(out, [
      'site/pkg directory 755 0:0',
      'site/pkg/__init__.py file 755 0:0 x = 1',
      'site/pkg/empty.py file 644 0:0',
      'site/pkg-1.0.dist-info directory 755 0:0',
      'site/link symlink 777 0:0 -> /etc/shadow',
    ]);
  });

  it('refuses a user site larger than the cap before copying past it', async () => {
    await assert.rejects(
      repacked(
        [
          { header: { name: 'site-packages/a.py' }, body: '12345' },
          { header: { name: 'site-packages/b.py' }, body: '67890' },
        ],
        8,
      ),
      (e: unknown) => e instanceof ChatSiteTooLarge && e.bytes === 10,
    );
  });

  it('builds FROM the sandbox image with no step a chat wrote, and keeps PID 1 out of the chat packages', () => {
    assert.equal(
      chatDockerfile('sha256:abc', ['pkg 1.0']),
      [
        '# CodeAct Sandbox: the packages a chat installed. Generated.',
        'FROM sha256:abc',
        'COPY site/ /opt/codeact-sandbox/chat-site/',
        'COPY chat-site.py /opt/codeact-sandbox/chat-site.py',
        'USER 0:0',
        `RUN ["python3","-I","-S","-c","import os, site\\nd = site.getsitepackages()[0]\\nos.makedirs(d, exist_ok=True)\\nopen(os.path.join(d, \\"codeact-chat-site.pth\\"), \\"w\\").write(${JSON.stringify(JSON.stringify(`${CHAT_PTH_LINE}\n`)).slice(1, -1)})"]`,
        'LABEL dev.codeact-sandbox.chat.distributions="[\\"pkg 1.0\\"]"',
        '',
      ].join('\n'),
    );
    assert.equal(CHAT_PTH_LINE, 'import os; os.getpid() != 1 and os.getuid() != 0 and exec(open("/opt/codeact-sandbox/chat-site.py").read(), {})');
  });

  it('names the same folder as the runner, which adds it to the path of the programs it forks', () => {
    const runner = fs.readFileSync(path.join(__dirname, '../../resources/runner/70_child.py'), 'utf8');
    assert.match(runner, new RegExp(`^_CHAT_SITE = '${CHAT_SITE}'$`, 'm'));
  });

  it('tells the model what the prepared image holds, at most ten names', () => {
    assert.equal(
      preparedNote(['pkg 1.0']),
      "This chat's sandbox was made again from its prepared image, which has the Python packages installed earlier in this chat (pkg 1.0): they were not installed again, and pip finds them installed.",
    );
    const many = Array.from({ length: 12 }, (_, i) => `p${i} 1`);
    assert.match(preparedNote(many), /\(p0 1, p1 1, p2 1, p3 1, p4 1, p5 1, p6 1, p7 1, p8 1, p9 1 and 2 more\)/);
    assert.match(preparedNote([]), /which has the files installed earlier in this chat into the Python user site:/);
  });
});
