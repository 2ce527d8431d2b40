import * as assert from 'node:assert/strict';
import { asNamed, tagsIn } from '../../src/docker/images/repoTags';

describe('listed image tags as we name them', () => {
  it('reads a registry off, by the reference grammar, and nothing else', () => {
    assert.equal(asNamed('registry.example/codeact-sandbox/proxy:ab-202612'), 'codeact-sandbox/proxy:ab-202612');
    assert.equal(asNamed('localhost/codeact-sandbox/python:bookworm'), 'codeact-sandbox/python:bookworm');
    assert.equal(asNamed('registry:5000/codeact-sandbox/python:bookworm'), 'codeact-sandbox/python:bookworm');
    assert.equal(asNamed('codeact-sandbox/python:bookworm'), 'codeact-sandbox/python:bookworm');
    assert.equal(asNamed('python:3.12'), 'python:3.12');
    assert.equal(asNamed('someone/codeact-sandbox/python:bookworm'), 'someone/codeact-sandbox/python:bookworm');
  });

  it("keeps a repository's tags only, whichever engine listed them", () => {
    const listed = ['registry.example/codeact-sandbox/chat-packages:aa', 'localhost/codeact-sandbox/chat-packages:bb', 'codeact-sandbox/chat-packages:cc', 'codeact-sandbox/chat-packages-x:dd', 'someone/codeact-sandbox/chat-packages:ee', '<none>:<none>'];
    assert.deepEqual(tagsIn(listed, 'codeact-sandbox/chat-packages'), ['codeact-sandbox/chat-packages:aa', 'codeact-sandbox/chat-packages:bb', 'codeact-sandbox/chat-packages:cc']);
    assert.deepEqual(tagsIn(undefined, 'codeact-sandbox/chat-packages'), []);
  });
});
