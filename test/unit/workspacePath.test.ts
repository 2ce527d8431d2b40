import * as assert from 'node:assert/strict';
import { bytesReader } from '../../src/core/sandbox';
import { selectFilesIn, type WorkspaceSource } from '../../src/core/files/filesIn';
import { toWorkspaceName } from '../../src/core/files/workspacePath';

describe('paths the model gives, as workspace names (unit)', function () {
  const posix = [{ path: '/home/me/project', prefix: '' }];
  const windows = [{ path: 'C:\\Users\\me\\project', prefix: '' }];

  it('maps a path inside a workspace folder, and Windows separators, to the workspace name', function () {
    assert.equal(toWorkspaceName('/home/me/project/data/sales.csv', posix), 'data/sales.csv');
    assert.equal(toWorkspaceName('/home/me/project/', [{ path: '/home/me/project/', prefix: '' }]), '/home/me/project/');
    assert.equal(toWorkspaceName('C:\\Users\\me\\project\\data\\sales.csv', windows), 'data/sales.csv');
    assert.equal(toWorkspaceName('c:/users/ME/Project/data/sales.csv', windows), 'data/sales.csv');
    assert.equal(toWorkspaceName('data\\sales.csv', posix), 'data/sales.csv');
    const multi = [
      { path: '/srv/app', prefix: 'app/' },
      { path: '/srv/data', prefix: 'data/' },
    ];
    assert.equal(toWorkspaceName('/srv/data/2024/sales.csv', multi), 'data/2024/sales.csv');
    assert.equal(toWorkspaceName('data/2024/sales.csv', multi), 'data/2024/sales.csv');
  });

  it('leaves what is not inside a folder as it came, so the usual checks judge it', function () {
    // A folder whose name only starts like the workspace's.
    assert.equal(toWorkspaceName('/home/me/project-secrets/key.pem', posix), '/home/me/project-secrets/key.pem');
    assert.equal(toWorkspaceName('/etc/passwd', posix), '/etc/passwd');
    assert.equal(toWorkspaceName('/home/me/project', posix), '/home/me/project');
    assert.equal(toWorkspaceName('D:\\other\\a.csv', windows), 'D:\\other\\a.csv');
    // Case matters on POSIX paths.
    assert.equal(toWorkspaceName('/home/me/Project/a.csv', posix), '/home/me/Project/a.csv');
    // Mapped, but still leaving the folder: the checks refuse it as before.
    assert.equal(toWorkspaceName('/home/me/project/../.ssh/id_rsa', posix), '../.ssh/id_rsa');
    assert.equal(toWorkspaceName('..\\..\\etc\\passwd', posix), '../../etc/passwd');
  });

  it('shares the file for its path, and refuses a path out of the folder without echoing it', async function () {
    const files: Record<string, string> = { 'data/sales.csv': 'month,revenue\n', 'notes.md': 'n' };
    const source: WorkspaceSource = {
      roots: posix,
      list: async () => Object.keys(files),
      open: async (name) => ({ size: files[name]!.length, open: async () => bytesReader(Buffer.from(files[name]!)) }),
    };
    const caps = { maxFiles: 5, maxFileBytes: 1000, maxTotalBytes: 2000, denyGlobs: [], programBytes: 10 };
    const shared = await selectFilesIn(['/home/me/project/data/sales.csv', 'notes.md'], source, caps);
    assert.deepEqual(shared.map((f) => [f.name, f.size]), [['data/sales.csv', 14], ['notes.md', 1]]);
    await assert.rejects(selectFilesIn(['/home/me/project/../.ssh/id_rsa'], source, caps), {
      code: 'invalid_input',
      message:
        "One requested file name is not a plain workspace-relative path (entry 1). Use a path like \"data/input.csv\" with '/' between folders; '..' and '.' as folder names, a leading '/' or '~', ':', '\\' and control characters are not allowed.\nNo files were shared; correct the list of files and call again.",
    });
  });
});
