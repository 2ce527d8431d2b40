import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { manifest } from './manifest';

/**
 * The README and docs/ ship in the package and link to each other: a link to a page or heading
 * that is not there, a setting that does not exist or a command title the palette does not show
 * sends a reader nowhere.
 */
const root = path.resolve(__dirname, '../..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks (a link or heading there is an example, not one). */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

function links(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((t) => !/^[a-z]+:/i.test(t));
}

describe('README and docs (unit)', () => {
  it('every relative link leads to a file there, and every #anchor to a heading of it', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = fs.readFileSync(path.join(root, page), 'utf8');
      for (const link of links(text)) {
        const [file, anchor] = link.split('#') as [string, string | undefined];
        const target = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
        const full = path.join(root, target);
        if (!fs.existsSync(full)) broken.push(`${page}: ${link} (no ${target})`);
        else if (anchor !== undefined && !anchors(fs.readFileSync(full, 'utf8')).has(anchor)) broken.push(`${page}: ${link} (no heading #${anchor} in ${target})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('every page of docs/ is listed in the README and in the index of docs/', () => {
    const docs = pages.filter((p) => p.startsWith('docs/') && p !== 'docs/README.md');
    const listed = (page: string) => new Set(links(fs.readFileSync(path.join(root, page), 'utf8')).map((l) => path.posix.join(path.posix.dirname(page), l.split('#')[0]!)));
    const readme = listed('README.md');
    const index = listed('docs/README.md');
    assert.deepEqual(docs.filter((d) => !readme.has(d) || !index.has(d)), []);
  });

  it('no page links to a root file the package renames (readme.md, changelog.md, LICENSE.txt in the .vsix)', () => {
    const renamed = ['README.md', 'CHANGELOG.md', 'LICENSE'];
    const found = pages.flatMap((page) =>
      links(fs.readFileSync(path.join(root, page), 'utf8'))
        .map((l) => path.posix.normalize(path.posix.join(path.posix.dirname(page), l.split('#')[0]!)))
        .filter((target) => renamed.includes(target))
        .map((target) => `${page}: ${target}`),
    );
    assert.deepEqual(found, []);
  });

  it('every setting they name is a setting of the extension', () => {
    const settings = new Set(manifest.contributes.configuration.flatMap((c: { properties: Record<string, unknown> }) => Object.keys(c.properties)));
    const unknown: string[] = [];
    for (const page of pages) {
      const text = fs.readFileSync(path.join(root, page), 'utf8');
      for (const m of text.matchAll(/codeactSandbox\.[A-Za-z.]*[A-Za-z]/g)) if (!settings.has(m[0])) unknown.push(`${page}: ${m[0]}`);
    }
    assert.deepEqual(unknown, []);
  });

  it('every command they name as "CodeAct Sandbox: Title" is a command with that title', () => {
    const titles = new Set(manifest.contributes.commands.map((c: { title: string }) => c.title));
    const unknown: string[] = [];
    for (const page of pages) {
      const text = fs.readFileSync(path.join(root, page), 'utf8');
      for (const m of text.matchAll(/\*CodeAct Sandbox: ([^*]+)\*/g)) {
        const title = m[1]!.replace(/\s+/g, ' ');
        if (!titles.has(title)) unknown.push(`${page}: ${title}`);
      }
    }
    assert.deepEqual(unknown, []);
  });
});
