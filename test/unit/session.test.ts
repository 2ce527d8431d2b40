import * as assert from 'node:assert/strict';
import { sessionDigest, sessionDisplayName, sessionKeyFromToken } from '../../src/core/session';

const B64 = 'OTI4MDQxMDUtZDU5MS00ODFkLWE0MTItZTFhMGU4MmZkYzMx'; // base64("92804105-d591-481d-a412-e1a0e82fdc31")
const RESOURCE = `vscode-chat-session://local/${B64}`;

/** Mimics vscode.Uri: an object whose toString() is its canonical form. */
class FakeUri {
  constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
  ) {}
  toString() {
    return `${this.scheme}://${this.authority}${this.path}`;
  }
}

describe('session key from the invocation token (unit)', () => {
  it('current VS Code: { sessionResource: Uri }', () => {
    assert.equal(sessionKeyFromToken({ sessionResource: new FakeUri('vscode-chat-session', 'local', `/${B64}`) }), `chat:${RESOURCE}`);
  });

  it('the same resource as plain UriComponents (as seen in prepareInvocation)', () => {
    assert.equal(
      sessionKeyFromToken({ chatSessionResource: { $mid: 1, scheme: 'vscode-chat-session', authority: 'local', path: `/${B64}`, external: RESOURCE } }),
      `chat:${RESOURCE}`,
    );
    assert.equal(sessionKeyFromToken({ sessionResource: { scheme: 'vscode-chat-session', authority: 'local', path: `/${B64}` } }), `chat:${RESOURCE}`);
  });

  it('older VS Code: { sessionId }', () => {
    assert.equal(sessionKeyFromToken({ sessionId: 'abc-123', sessionResource: undefined }), 'chat:abc-123');
  });

  it('no session: undefined, so the caller uses the window', () => {
    assert.equal(sessionKeyFromToken(undefined), undefined);
    assert.equal(sessionKeyFromToken(null), undefined);
    assert.equal(sessionKeyFromToken('token'), undefined);
    assert.equal(sessionKeyFromToken({}), undefined);
    assert.equal(sessionKeyFromToken({ sessionId: '' }), undefined);
    assert.equal(sessionKeyFromToken({ sessionResource: 42 }), undefined);
  });

  it('two chats give two keys; the same chat gives one', () => {
    const a = sessionKeyFromToken({ sessionResource: new FakeUri('vscode-chat-session', 'local', '/AAAA') });
    const b = sessionKeyFromToken({ sessionResource: new FakeUri('vscode-chat-session', 'local', '/BBBB') });
    const a2 = sessionKeyFromToken({ sessionResource: { external: 'vscode-chat-session://local/AAAA' } });
    assert.notEqual(a, b);
    assert.equal(a, a2);
  });

  it('digests are short, stable and label-safe; display names are readable', () => {
    assert.match(sessionDigest(`chat:${RESOURCE}`), /^[0-9a-f]{16}$/);
    assert.equal(sessionDigest('x'), sessionDigest('x'));
    assert.equal(sessionDisplayName(`chat:${RESOURCE}`), 'chat 92804105');
    assert.equal(sessionDisplayName('window:abc'), 'this window');
    assert.equal(sessionDisplayName('cli:demo'), 'session demo');
  });
});
