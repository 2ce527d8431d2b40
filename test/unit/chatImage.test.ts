import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { extract, pack, type Header } from 'tar-stream';
import { CHAT_PTH_LINE, CHAT_SITE, chatDockerfile, userSitePackages } from '../../src/docker/images/chatImage';
import { ChatSiteTooLarge, SparseSite, diskBytes, distributionOf, pageBytes, recordPaths, repackSite, sitePath, type SiteLimits } from '../../src/docker/images/chatSite';
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
async function repacked(entries: Entry[], limits?: SiteLimits): Promise<{ found: string[]; bytes: number; out: string[] }> {
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
  const { distributions: found, bytes } = await repackSite(archiveOf(entries), out, limits);
  out.finalize();
  await done;
  return { found, bytes, out: read };
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

  it('keeps the files a RECORD read before them lists, under site/, owned by root without set-id bits, each after its folders, and nothing else', async () => {
    const record = ['pkg/__init__.py,sha256=x,5', 'pkg/empty.py,,', 'pkg/sub/deep.py,,', 'pkg-1.0.dist-info/RECORD,,', '../../../bin/tool,,', 'pkg/link,,', 'pkg/fifo,,', 'later.py,,', ''].join('\n');
    const { found, bytes, out } = await repacked([
      { header: { name: 'site-packages/', type: 'directory', mode: 0o700 } },
      // Before any RECORD lists it: not kept, even though a RECORD later does.
      { header: { name: 'site-packages/later.py' }, body: 'early' },
      { header: { name: 'site-packages/pkg-1.0.dist-info/', type: 'directory' } },
      { header: { name: 'site-packages/pkg-1.0.dist-info/RECORD', mtime: new Date(1_700_000_000_000) }, body: record },
      { header: { name: 'site-packages/pkg/', type: 'directory', mode: 0o777, uid: 65534, gid: 65534 } },
      { header: { name: 'site-packages/pkg/__init__.py', mode: 0o4777, uid: 65534, mtime: new Date(1_700_000_001_000) }, body: 'x = 1' },
      { header: { name: 'site-packages/pkg/empty.py' }, body: '' },
      { header: { name: 'site-packages/pkg/sub/deep.py' }, body: 'deep' },
      // Twice: the first is kept.
      { header: { name: 'site-packages/pkg/sub/deep.py' }, body: 'again' },
      // Written by a program, listed by no RECORD.
      { header: { name: 'site-packages/notes.txt' }, body: 'data' },
      { header: { name: 'site-packages/pkg/cache.bin' }, body: 'data' },
      { header: { name: 'site-packages/pkg/__pycache__/x.cpython-311.pyc' }, body: 'data' },
      // A dist-info without a RECORD, and a RECORD that is not at the top: no distribution.
      { header: { name: 'site-packages/bare-2.0.dist-info/METADATA' }, body: 'Name: bare' },
      { header: { name: 'site-packages/pkg/x-1.dist-info/RECORD' }, body: 'notes.txt,,' },
      // Listed, but not a regular file, or a name that leaves the site.
      { header: { name: 'site-packages/pkg/link', type: 'symlink', linkname: '/etc/shadow' } },
      { header: { name: 'site-packages/pkg/fifo', type: 'fifo' } },
      { header: { name: 'site-packages/../../bin/tool' }, body: 'no' },
      { header: { name: 'site-packages/pkg/../notes.txt' }, body: 'no' },
    ]);
    assert.deepEqual(found, ['pkg 1.0']);
    assert.deepEqual(out, [
      'site/pkg-1.0.dist-info directory 755 0:0',
      `site/pkg-1.0.dist-info/RECORD file 644 0:0 ${record}`,
      'site/pkg directory 755 0:0',
      'site/pkg/__init__.py file 755 0:0 x = 1',
      'site/pkg/empty.py file 644 0:0',
      'site/pkg/sub directory 755 0:0',
      'site/pkg/sub/deep.py file 644 0:0 deep',
    ]);
    // Three folders and four files, each in whole 4 KiB blocks.
    assert.equal(bytes, 7 * 4096);
  });

  it("keeps a file's time, which a .pyc pip compiled is checked against", async () => {
    const ex = extract();
    const times: string[] = [];
    ex.on('entry', (h, body, next) => {
      times.push(`${h.name} ${h.mtime?.toISOString()}`);
      body.resume();
      body.on('end', () => next());
    });
    const out = pack();
    (out as unknown as Readable).pipe(ex);
    await repackSite(
      archiveOf([
        { header: { name: 'site-packages/p-1.dist-info/RECORD', mtime: new Date('2024-01-02T03:04:05Z') }, body: 'p.py,,' },
        { header: { name: 'site-packages/p.py', mtime: new Date('2024-05-06T07:08:09Z') }, body: 'x' },
      ]),
      out,
    );
    out.finalize();
    await new Promise<void>((resolve) => ex.on('finish', () => resolve()));
    assert.deepEqual(times, ['site/p-1.dist-info 2024-01-02T03:04:05.000Z', 'site/p-1.dist-info/RECORD 2024-01-02T03:04:05.000Z', 'site/p.py 2024-05-06T07:08:09.000Z']);
  });

  it('reads the paths of a RECORD as pip writes it, quoted ones too, and none that leaves the site', () => {
    const record = ['a/b.py,sha256=abc,12', '"we,ird/""q"".py",sha256=def,3', 'a-1.0.dist-info/RECORD,,', '../../../bin/a,sha256=x,1', '/etc/passwd,,', 'a/./b.py,,', 'a//b.py,,', '"unclosed,,', '', 'plain'].join('\r\n');
    assert.deepEqual(recordPaths(record), ['a/b.py', 'we,ird/"q".py', 'a-1.0.dist-info/RECORD', 'plain']);
    assert.deepEqual(sitePath('a/b.py'), ['a', 'b.py']);
    assert.equal(sitePath(''), undefined);
    assert.equal(sitePath('a/../b'), undefined);
  });

  it('counts what a file takes on a disk: whole blocks, one at least', () => {
    assert.deepEqual([0, 1, 4096, 4097, 10 * 4096].map(diskBytes), [4096, 4096, 4096, 8192, 10 * 4096]);
  });

  it('refuses a user site larger than the cap before copying past it', async () => {
    await assert.rejects(
      repacked(
        [
          { header: { name: 'site-packages/a-1.dist-info/RECORD' }, body: 'a.py,,\nb.py,,' },
          { header: { name: 'site-packages/a.py' }, body: '12345' },
          { header: { name: 'site-packages/b.py' }, body: '67890' },
        ],
        { maxBytes: 2 * 4096, workAreaBytes: 1 << 20 },
      ),
      (e: unknown) => e instanceof ChatSiteTooLarge && e.bytes === 3 * 4096,
    );
  });

  it('refuses files that, every byte written, would not fit in the work area they were read from: one is sparse', async () => {
    const files = [
      { header: { name: 'site-packages/a-1.dist-info/RECORD' }, body: 'a/x.py,,\na/y.py,,\na/empty.py,,' },
      { header: { name: 'site-packages/a/empty.py' }, body: '' },
      { header: { name: 'site-packages/a/x.py' }, body: 'x'.repeat(4097) },
      { header: { name: 'site-packages/a/y.py' }, body: 'y' },
    ];
    // RECORD 1 page, empty.py none, x.py 2, y.py 1: 4 pages fit in 4, not in 3.
    assert.equal((await repacked(files, { maxBytes: 1 << 20, workAreaBytes: 4 * 4096 })).found.join(), 'a 1');
    await assert.rejects(repacked(files, { maxBytes: 1 << 20, workAreaBytes: 3 * 4096 }), (e: unknown) => e instanceof SparseSite && e.bytes === 4 * 4096);
    assert.deepEqual([0, 1, 4096, 4097].map(pageBytes), [0, 4096, 4096, 8192]);
  });

  it('builds FROM the sandbox image with no step a chat wrote, and keeps PID 1 out of the chat packages', () => {
    assert.equal(
      chatDockerfile('sha256:abc', ['pkg 1.0'], 8192),
      [
        '# CodeAct Sandbox: the packages a chat installed. Generated.',
        'FROM sha256:abc',
        'COPY site/ /opt/codeact-sandbox/chat-site/',
        'COPY chat-site.py /opt/codeact-sandbox/chat-site.py',
        'USER 0:0',
        `RUN ["python3","-I","-S","-c","import os, site\\nd = site.getsitepackages()[0]\\nos.makedirs(d, exist_ok=True)\\nopen(os.path.join(d, \\"codeact-chat-site.pth\\"), \\"w\\").write(${JSON.stringify(JSON.stringify(`${CHAT_PTH_LINE}\n`)).slice(1, -1)})"]`,
        'LABEL dev.codeact-sandbox.chat.distributions="[\\"pkg 1.0\\"]"',
        'LABEL dev.codeact-sandbox.chat.bytes="8192"',
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
