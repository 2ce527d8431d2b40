import * as assert from 'node:assert/strict';
import {
  DEFAULT_DENY_GLOBS,
  bytesText,
  checkNameList,
  classifyName,
  coexistenceProblems,
  denyMatcher,
  resolveFilesIn,
  validateOutputNames,
  type FilesInOptions,
  type ListedFile,
} from '../../src/core/files/names';
import { thrownToolError } from './toolErrors';

const MB = 1024 * 1024;

/** The model's sentence for a call refused as invalid input. */
const refusal = (fn: () => unknown): string => thrownToolError(fn, 'invalid_input').modelMessage;

const TRAVERSAL_ONE =
  "One requested file name is not a plain workspace-relative path (entry 1). Use a path like \"data/input.csv\" with '/' between folders; " +
  "'..' and '.' as folder names, a leading '/' or '~', ':', '\\' and control characters are not allowed.";
const SHARED_NOTHING = 'No files were shared; correct the list of files and call again.';

describe('file names from the model: classifyName (unit)', () => {
  it('accepts plain relative POSIX paths and returns them unchanged', () => {
    for (const name of ['a.csv', 'data/sales.csv', '.gitignore', 'a b.txt', 'my~file.txt', 'a%2e%2e/b', 'x/.hidden/y', 'v1.2/notes.md', 'résumé.pdf']) {
      assert.deepEqual(classifyName(name), { kind: 'ok', normalized: name }, name);
    }
  });

  it('normalizes to Unicode NFC, so a decomposed name equals the composed one', () => {
    assert.deepEqual(classifyName('cafe\u0301.txt'), { kind: 'ok', normalized: 'caf\u00e9.txt' });
  });

  it('accepts names up to 1024 characters and 32 segments, and refuses longer or deeper ones', () => {
    assert.equal(classifyName('a'.repeat(1024)).kind, 'ok');
    assert.equal(classifyName('a'.repeat(1025)).kind, 'traversal');
    assert.equal(classifyName(Array(32).fill('d').join('/')).kind, 'ok');
    assert.equal(classifyName(Array(33).fill('d').join('/')).kind, 'traversal');
  });

  const refused: [string, string][] = [
    ['', 'empty'],
    ['..', 'parent'],
    ['../a', 'leading parent'],
    ['a/../b', 'inner parent'],
    ['a/..', 'trailing parent'],
    ['.', 'current folder'],
    ['./a', 'leading current folder'],
    ['a/./b', 'inner current folder'],
    ['...', 'all dots'],
    ['/etc/passwd', 'absolute'],
    ['//server/share/x', 'UNC-like'],
    ['C:', 'drive letter'],
    ['C:/Windows/win.ini', 'drive path'],
    ['c:x', 'drive-relative'],
    ['a\\b', 'backslash'],
    ['..\\..\\x', 'backslash traversal'],
    ['file:///etc/passwd', 'file URL'],
    ['file:a', 'file scheme without slashes'],
    ['https://example.com/x', 'http URL'],
    ['notes.txt:hidden', 'NTFS alternate stream'],
    ['~', 'home'],
    ['~/x', 'home path'],
    ['~root/x', 'other user home'],
    ['a//b', 'empty segment'],
    ['a/', 'trailing slash'],
    [' a', 'leading space'],
    ['a ', 'trailing space'],
    ['a /b', 'segment with trailing space'],
    ['a/\tb', 'segment with leading tab'],
    ['\u00a0a', 'leading no-break space'],
    ['a.', 'trailing dot (Windows drops it)'],
    ['a\0b', 'NUL'],
    ['a\nb', 'newline'],
    ['a\u001bb', 'escape'],
    ['a\u007fb', 'DEL'],
    ['a\u0085b', 'C1 control'],
    ['a\u202eb', 'right-to-left override'],
    ['a\u2066b', 'bidi isolate'],
    ['a\ud800b', 'lone high surrogate'],
    ['a\udc00b', 'lone low surrogate'],
    ['nul', 'Windows device'],
    ['CON.txt', 'Windows device with extension'],
    ['out/aux.csv', 'Windows device in a folder'],
    ['com1', 'Windows serial port'],
    ['LPT9.log', 'Windows printer port'],
  ];
  for (const [name, why] of refused) {
    it(`refuses ${why}: ${JSON.stringify(name)}`, () => {
      assert.deepEqual(classifyName(name), { kind: 'traversal' });
    });
  }

  it('refuses a non-string at run time rather than throwing', () => {
    assert.deepEqual(classifyName(42 as unknown as string), { kind: 'traversal' });
    assert.deepEqual(classifyName(undefined as unknown as string), { kind: 'traversal' });
  });

  it('keeps names that merely contain device names or surrogate pairs', () => {
    assert.equal(classifyName('console.log').kind, 'ok');
    assert.equal(classifyName('nullable.txt').kind, 'ok');
    assert.equal(classifyName('emoji-\ud83d\ude00.txt').kind, 'ok');
  });
});

describe('default deny globs (unit)', () => {
  const deny = denyMatcher(DEFAULT_DENY_GLOBS);

  // What the default rules do to workspace names, decided as a security review would. Refused:
  // anything that commonly holds a credential, wherever it sits and however it is spelled.
  // Allowed: ordinary files whose names merely resemble a secret's.
  const refused: [string, string][] = [
    ['.env', 'environment file'],
    ['.env.local', 'environment variant'],
    ['.env.example', 'examples of .env are refused too: they are often the real file renamed'],
    ['app/.env.production', 'nested environment variant'],
    ['.envrc', "direnv's exports"],
    ['.git/config', 'repository metadata (may hold a token in a remote URL)'],
    ['vendor/lib/.git', "a submodule's .git file"],
    ['.git-credentials', "git's credential store"],
    ['certs/server.pem', 'PEM key or certificate'],
    ['tls.key', 'private key'],
    ['home/.ssh/id_rsa', 'SSH key'],
    ['id_rsa.pub', 'SSH public key, next to its private key'],
    ['keys/id_ed25519', 'SSH key'],
    ['id_ecdsa', 'SSH key'],
    ['old/id_dsa', 'SSH key'],
    ['putty/server.ppk', 'PuTTY key'],
    ['AuthKey_ABC123.p8', 'Apple signing key'],
    ['signing/cert.p12', 'PKCS#12 store'],
    ['cert.pfx', 'PKCS#12 store'],
    ['android/app/release.keystore', 'Android signing store'],
    ['server/truststore.jks', 'Java key store'],
    ['krb5.keytab', 'Kerberos keys'],
    ['vpn/office.ovpn', 'VPN profile with embedded keys'],
    ['.gnupg/private-keys-v1.d/x.key', 'GnuPG home'],
    ['.npmrc', 'npm token'],
    ['.yarnrc.yml', 'yarn token'],
    ['pkg/.pypirc', 'PyPI token'],
    ['.netrc', 'machine passwords'],
    ['_netrc', 'machine passwords, Windows name'],
    ['.pgpass', 'PostgreSQL passwords'],
    ['.my.cnf', 'MySQL password'],
    ['deploy/.htpasswd', 'web server passwords'],
    ['.aws/config', 'AWS login'],
    ['.azure/msal_token_cache.json', 'Azure login'],
    ['.config/gcloud/application_default_credentials.json', 'Google Cloud login'],
    ['.config/gh/hosts.yml', 'GitHub CLI token'],
    ['.s3cfg', 's3cmd keys'],
    ['.kube/config', 'Kubernetes login'],
    ['kubeconfig', 'Kubernetes login at the root (measured: it was shared)'],
    ['clusters/prod-kubeconfig.yaml', 'Kubernetes login, renamed'],
    ['terraform.tfstate', 'Terraform state (measured: it was shared)'],
    ['infra/terraform.tfstate.backup', 'Terraform state backup'],
    ['terraform.tfstate.d/prod/terraform.tfstate', "a Terraform workspace's state"],
    ['prod.tfvars', 'Terraform variables'],
    ['env/prod.auto.tfvars', 'Terraform variables'],
    ['vars.tfvars.json', 'Terraform variables, JSON'],
    ['.terraform/terraform.tfstate', 'backend configuration with its keys'],
    ['.terraformrc', 'Terraform CLI token'],
    ['terraform.rc', 'Terraform CLI token, Windows name'],
    ['.vault-token', 'Vault token'],
    ['.ssh/known_hosts', 'SSH folder'],
    ['credentials.json', 'credentials'],
    ['.aws/credentials', 'credentials'],
    ['gcp-credentials.json', 'credentials'],
    ['config/client_secret.json', 'secret'],
    ['docs/secretary.md', 'over-refused on purpose: *secret* is kept broad, a rename is the cost'],
    ['.docker/config.json', 'registry logins'],
    ['.dockercfg', 'registry logins, old name'],
    ['vault.kdbx', 'KeePass database'],
    // Case does not help: these are the same files on Windows and macOS.
    ['.ENV', 'case variant'],
    ['Config/ClientSecret.JSON', 'case variant'],
    ['KEYS/ID_RSA', 'case variant'],
    ['INFRA/Terraform.TFSTATE', 'case variant'],
    ['.Kube/Config', 'case variant'],
    ['Prod.TFVARS', 'case variant'],
    // Deeply nested, or qualified by a multi-root folder name.
    ['backend/.env', 'multi-root folder'],
    ['a/b/c/d/e/.kube/config', 'nested'],
    ['services/api/deploy/kubeconfig', 'nested'],
  ];
  const allowed: [string, string][] = [
    ['src/keyboard.ts', '"key" but not a .key file'],
    ['monkey.py', '"key" inside a word'],
    ['keys/README.md', 'a folder called keys'],
    ['env.txt', 'not a dotfile'],
    ['src/environment.ts', 'not .env'],
    ['environment.yml', 'conda environment'],
    ['.gitignore', 'not .git/'],
    ['.github/workflows/ci.yml', 'not .git/'],
    ['.gitmodules', 'not .git/'],
    ['git/config', 'not .git/'],
    ['docker/config.json', 'not .docker/'],
    ['pem.txt', 'not a .pem file'],
    ['README.md', 'ordinary'],
    ['data/sales.csv', 'ordinary'],
    ['infra/main.tf', 'Terraform code'],
    ['infra/variables.tf', 'Terraform code'],
    ['terraform.tfvars.example', 'an example of variables'],
    ['docs/tfstate.md', 'not a .tfstate file'],
    ['k8s/deployment.yaml', 'Kubernetes manifest'],
    ['kube/notes.md', 'not .kube/'],
    ['src/keystore.ts', 'not a .keystore file'],
    ['pgpass.example', 'not .pgpass'],
    ['vault/policy.hcl', 'not .vault-token'],
    ['docs/ssh.md', 'not .ssh/'],
    ['.config/Code/User/settings.json', 'other tools under .config'],
    ['notes/id.txt', 'not an SSH key'],
  ];

  const verdict = (name: string) => (deny(name) === undefined ? 'allowed' : 'refused');
  for (const [name, why] of refused) {
    it(`refuses ${name} (${why})`, () => assert.equal(verdict(name), 'refused'));
  }
  for (const [name, why] of allowed) {
    it(`allows ${name} (${why})`, () => assert.equal(verdict(name), 'allowed'));
  }
});

describe('files in: resolveFilesIn (unit)', () => {
  const listing: ListedFile[] = [
    { name: 'data/sales.csv', size: 1000 },
    { name: 'data/Sales2.csv', size: 2000 },
    { name: 'archive/sales.csv', size: 3000 },
    { name: 'config/secrets.json', size: 10 },
    { name: '.env', size: 10 },
    { name: 'notes.md', size: 50 },
    { name: 'big.bin', size: 30 * MB },
  ];
  const opts: FilesInOptions = { denyGlobs: DEFAULT_DENY_GLOBS, maxFiles: 5, maxFileBytes: 10 * MB, maxTotalBytes: 20 * MB, programBytes: 500 };

  it('returns the listed files in request order, duplicates collapsed', () => {
    assert.deepEqual(resolveFilesIn(['notes.md', 'data/sales.csv', 'notes.md'], listing, opts), [
      { name: 'notes.md', size: 50 },
      { name: 'data/sales.csv', size: 1000 },
    ]);
  });

  it('returns nothing for an empty request, whatever the program size', () => {
    assert.deepEqual(resolveFilesIn([], listing, { ...opts, programBytes: 100 * MB }), []);
  });

  it("matches a composed name to a decomposed listing entry and returns the listing's spelling", () => {
    const nfd = { name: 'cafe\u0301.csv', size: 7 };
    assert.deepEqual(resolveFilesIn(['caf\u00e9.csv'], [nfd], opts), [nfd]);
  });

  it('refuses a traversing name without echoing it or the listing', () => {
    const message = refusal(() => resolveFilesIn(['../data/sales.csv'], listing, opts));
    assert.equal(message, `${TRAVERSAL_ONE}\n${SHARED_NOTHING}`);
    for (const leak of ['../', 'sales', 'notes', 'secret', '.env']) assert.ok(!message.includes(leak), leak);
  });

  it('counts several traversing names by position only', () => {
    const message = refusal(() => resolveFilesIn(['/etc/passwd', 'notes.md', 'C:\\x', '~/.ssh/id_rsa'], listing, opts));
    assert.equal(
      message,
      "3 requested file names are not plain workspace-relative paths (entries 1, 3, 4). Use a path like \"data/input.csv\" with '/' between folders; " +
        "'..' and '.' as folder names, a leading '/' or '~', ':', '\\' and control characters are not allowed.\n" +
        SHARED_NOTHING,
    );
  });

  it('names an unlisted file and the near misses, closest first', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['data/sale.csv'], listing, opts)),
      '"data/sale.csv" is not in the workspace. Similar names in the workspace: "data/sales.csv", "archive/sales.csv", "data/Sales2.csv".\n' + SHARED_NOTHING,
    );
  });

  it('offers the same name in another case or folder', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['DATA/SALES.CSV'], listing, opts)),
      '"DATA/SALES.CSV" is not in the workspace. Similar names in the workspace: "data/sales.csv", "archive/sales.csv", "data/Sales2.csv".\n' + SHARED_NOTHING,
    );
    assert.equal(
      refusal(() => resolveFilesIn(['reports/notes.md'], listing, opts)),
      '"reports/notes.md" is not in the workspace. Similar names in the workspace: "notes.md".\n' + SHARED_NOTHING,
    );
  });

  it('says so when nothing is similar', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['quarterly-report.xlsx'], listing, opts)),
      '"quarterly-report.xlsx" is not in the workspace, and no file there has a similar name.\n' + SHARED_NOTHING,
    );
  });

  it('lists at most 5 near misses', () => {
    const many = ['a1.txt', 'a2.txt', 'a3.txt', 'a4.txt', 'a5.txt', 'a6.txt'].map((name) => ({ name, size: 1 }));
    assert.equal(
      refusal(() => resolveFilesIn(['a.txt'], many, opts)),
      '"a.txt" is not in the workspace. Similar names in the workspace: "a1.txt", "a2.txt", "a3.txt", "a4.txt", "a5.txt".\n' + SHARED_NOTHING,
    );
  });

  it('explains that a folder is not a file and names files in it', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['data'], listing, opts)),
      '"data" is a folder, not a file; request the files in it by name, for example "data/Sales2.csv", "data/sales.csv".\n' + SHARED_NOTHING,
    );
  });

  it('refuses a protected file as protected, even though it is listed', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['.env'], listing, opts)),
      '".env" is refused: it is a protected file that may hold secrets (deny rule ".env"), and protected files are never shared with the sandbox. Work without it.\n' +
        SHARED_NOTHING,
    );
  });

  it('refuses a protected name the same way when it is not listed, so the answer reveals nothing', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['keys/deploy.pem'], listing, opts)),
      '"keys/deploy.pem" is refused: it is a protected file that may hold secrets (deny rule "**/*.pem"), and protected files are never shared with the sandbox. Work without it.\n' +
        SHARED_NOTHING,
    );
  });

  it('never offers a protected file as a near miss', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['config/secrts.json'], listing, opts)),
      '"config/secrts.json" is not in the workspace, and no file there has a similar name.\n' + SHARED_NOTHING,
    );
    assert.equal(
      refusal(() => resolveFilesIn(['config'], listing, opts)),
      '"config" is not in the workspace, and no file there has a similar name.\n' + SHARED_NOTHING,
    );
  });

  it('honours a custom deny list and nothing else', () => {
    assert.deepEqual(resolveFilesIn(['.env'], listing, { ...opts, denyGlobs: [] }), [{ name: '.env', size: 10 }]);
    assert.match(refusal(() => resolveFilesIn(['notes.md'], listing, { ...opts, denyGlobs: ['*.md'] })), /^"notes\.md" is refused: .*\(deny rule "\*\.md"\)/);
  });

  it('refuses more files than the cap, counting distinct names', () => {
    const small = ['a', 'b', 'c', 'd'].map((name) => ({ name, size: 1 }));
    assert.deepEqual(resolveFilesIn(['a', 'b', 'c', 'a', 'b'], small, { ...opts, maxFiles: 3 }).length, 3);
    assert.equal(
      refusal(() => resolveFilesIn(['a', 'b', 'c', 'd'], small, { ...opts, maxFiles: 3 })),
      '4 files were requested; at most 3 can be shared with one program. Request fewer files.\n' + SHARED_NOTHING,
    );
  });

  it('refuses a file over the per-file cap from the listed size alone', () => {
    assert.equal(
      refusal(() => resolveFilesIn(['big.bin'], listing, { ...opts, maxTotalBytes: 100 * MB })),
      '"big.bin" is 30 MB (31457280 bytes); one shared file may be at most 10 MB (10485760 bytes). Ask the user for a smaller extract of it.\n' +
        SHARED_NOTHING,
    );
  });

  it('counts the program against the total and accepts exactly the limit', () => {
    const files = [
      { name: 'a.csv', size: 600 },
      { name: 'b.csv', size: 400 },
    ];
    const limits = { ...opts, maxFileBytes: 1000, maxTotalBytes: 1500, programBytes: 500 };
    assert.deepEqual(resolveFilesIn(['a.csv', 'b.csv'], files, limits), files);
    assert.equal(
      refusal(() => resolveFilesIn(['a.csv', 'b.csv'], files, { ...limits, programBytes: 501 })),
      'The requested files come to 1000 bytes and the program to 501 bytes: 1.5 KB (1501 bytes) in all, over the 1.5 KB (1500 bytes) one call may share. Request fewer or smaller files.\n' +
        SHARED_NOTHING,
    );
  });

  it('reports every problem of a call together, in one message', () => {
    const message = refusal(() =>
      resolveFilesIn(['data/sale.csv', '../x', '.env', 'big.bin', 'notes.md', 'data/sales.csv'], listing, { ...opts, maxFiles: 4 }),
    );
    assert.equal(
      message,
      [
        TRAVERSAL_ONE.replace('(entry 1)', '(entry 2)'),
        '"data/sale.csv" is not in the workspace. Similar names in the workspace: "data/sales.csv", "archive/sales.csv", "data/Sales2.csv".',
        '".env" is refused: it is a protected file that may hold secrets (deny rule ".env"), and protected files are never shared with the sandbox. Work without it.',
        '6 files were requested; at most 4 can be shared with one program. Request fewer files.',
        '"big.bin" is 30 MB (31457280 bytes); one shared file may be at most 10 MB (10485760 bytes). Ask the user for a smaller extract of it.',
        'The requested files come to 30 MB (31458330 bytes) and the program to 500 bytes: 30 MB (31458830 bytes) in all, over the 20 MB (20971520 bytes) one call may share. Request fewer or smaller files.',
        SHARED_NOTHING,
      ].join('\n'),
    );
  });

  it('uses the first of duplicate listing entries', () => {
    assert.deepEqual(
      resolveFilesIn(['a'], [{ name: 'a', size: 1 }, { name: 'a', size: 2 }], opts),
      [{ name: 'a', size: 1 }],
    );
  });
});

describe('declared outputs: validateOutputNames (unit)', () => {
  it('returns normalized names in order, duplicates collapsed', () => {
    assert.deepEqual(validateOutputNames(['chart.png', 'out/table.csv', 'chart.png', 'cafe\u0301.txt'], { maxFiles: 3 }), [
      'chart.png',
      'out/table.csv',
      'caf\u00e9.txt',
    ]);
    assert.deepEqual(validateOutputNames([], { maxFiles: 0 }), []);
  });

  it('allows outputs.json: it is reserved only in manifest mode', () => {
    assert.deepEqual(validateOutputNames(['outputs.json'], { maxFiles: 1 }), ['outputs.json']);
  });

  it('refuses traversing names by position, without echoing them', () => {
    const message = refusal(() => validateOutputNames(['ok.png', '../../etc/cron.d/x', 'C:\\evil'], { maxFiles: 5 }));
    assert.equal(
      message,
      "2 output names are not plain relative paths (entries 2, 3). Use a path like \"data/input.csv\" with '/' between folders; " +
        "'..' and '.' as folder names, a leading '/' or '~', ':', '\\' and control characters are not allowed.\n" +
        'Nothing was run; correct the output names and call again.',
    );
    assert.ok(!message.includes('cron') && !message.includes('evil'));
  });

  it('refuses more distinct names than the cap, with the numbers', () => {
    assert.deepEqual(validateOutputNames(['a', 'b', 'a'], { maxFiles: 2 }), ['a', 'b']);
    assert.equal(
      refusal(() => validateOutputNames(['a', 'b', 'c'], { maxFiles: 2 })),
      '3 output files were declared; at most 2 can be collected from one program. Declare fewer files.\nNothing was run; correct the output names and call again.',
    );
  });

  it('refuses names that cannot be stored side by side', () => {
    assert.equal(
      refusal(() => validateOutputNames(['a.png', 'A.png', 'out', 'out/b.png'], { maxFiles: 10 })),
      [
        '"a.png" and "A.png" differ only in case; use names that differ in more than case.',
        '"out" cannot be both a file and the folder of "out/b.png".',
        'Nothing was run; correct the output names and call again.',
      ].join('\n'),
    );
  });
});

describe('name list helpers (unit)', () => {
  it('coexistenceProblems finds case clashes and file-folder clashes at any depth, case-insensitively', () => {
    assert.deepEqual(coexistenceProblems(['a/b/c.txt', 'A/B']), ['"A/B" cannot be both a file and the folder of "a/b/c.txt".']);
    assert.deepEqual(coexistenceProblems(['a/b.txt', 'a/c.txt', 'ab']), []);
  });

  it('coexistenceProblems lists at most 10 problems and counts the rest', () => {
    const names = Array.from({ length: 12 }, (_, i) => [`f${i}`, `F${i}`]).flat();
    const problems = coexistenceProblems(names);
    assert.equal(problems.length, 11);
    assert.equal(problems[0], '"f0" and "F0" differ only in case; use names that differ in more than case.');
    assert.equal(problems[10], '... and 2 more names that cannot be stored together.');
  });

  it('checkNameList drops reserved names but checks them for clashes', () => {
    assert.deepEqual(checkNameList(['outputs.json', 'a.png'], { noun: 'name' }, ['outputs.json']), { valid: ['a.png'], problems: [] });
    assert.deepEqual(checkNameList(['Outputs.JSON'], { noun: 'name' }, ['outputs.json']), {
      valid: ['Outputs.JSON'],
      problems: ['"outputs.json" and "Outputs.JSON" differ only in case; use names that differ in more than case.'],
    });
  });

  it('checkNameList lists at most 10 positions', () => {
    const { problems } = checkNameList(Array(12).fill('..'), { noun: 'name', where: ' in x' });
    assert.match(problems[0]!, /^12 names in x are not plain relative paths \(entries 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, \.\.\.\)\./);
  });

  it('bytesText gives exact bytes, with a readable size above 1 KB', () => {
    assert.equal(bytesText(0), '0 bytes');
    assert.equal(bytesText(1023), '1023 bytes');
    assert.equal(bytesText(1024), '1.0 KB (1024 bytes)');
    assert.equal(bytesText(10 * MB), '10 MB (10485760 bytes)');
  });
});
