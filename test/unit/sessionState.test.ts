import * as assert from 'node:assert/strict';
import { STATE_LINES, SessionStates } from '../../src/core/state';

describe('session state lines (unit)', () => {
  const kept = (from: string, now: string) => ({ from, now, kept: true });

  it('says a successful call was kept, and a failed one left the state as it was', () => {
    const states = new SessionStates();
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') }), 'State: kept for the next call.');
    assert.equal(
      states.settle('chat', { reset: false, succeeded: false, outcome: { from: 'aaaaaaaa', now: 'aaaaaaaa', kept: false } }),
      'State: unchanged, because this call did not succeed; the next call starts from the state the last successful call left.',
    );
    assert.equal(
      states.settle('other', { reset: false, succeeded: false, outcome: { from: '', now: '', kept: false } }),
      'State: unchanged, because this call did not succeed; the next call starts from an empty state.',
    );
  });

  it('names what a successful call left that cannot be kept', () => {
    const states = new SessionStates();
    const line = (reason: string) => states.settle('chat', { reset: false, succeeded: true, outcome: { from: '', now: '', kept: false, reason } });
    assert.equal(line('threads'), 'State: not kept, because it left threads running; the next call starts from the state before this call.');
    assert.equal(line('processes'), 'State: not kept, because it left child processes running; the next call starts from the state before this call.');
    assert.equal(line('sockets'), 'State: not kept, because it left sockets open; the next call starts from the state before this call.');
  });

  it('says the state was lost when the sandbox no longer has the one the chat left, once', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'bbbbbbbb') }), `${STATE_LINES.lost} ${STATE_LINES.kept}`);
    assert.equal(
      STATE_LINES.lost,
      'The earlier state was lost (the sandbox was removed or restarted), so this call started from an empty state.',
    );
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('bbbbbbbb', 'cccccccc') }), STATE_LINES.kept);
  });

  it('does not call an asked-for reset a loss, and another chat is not this one', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    assert.equal(states.settle('chat', { reset: true, succeeded: true, outcome: kept('', 'bbbbbbbb') }), STATE_LINES.kept);
    assert.equal(states.settle('new chat', { reset: false, succeeded: true, outcome: kept('', 'cccccccc') }), STATE_LINES.kept);
  });

  it('says so when the call ran without the runner (docker exec), and keeps expecting the state', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    assert.equal(
      states.settle('chat', { reset: false, succeeded: true, outcome: undefined }),
      "State: not available to this call, because the sandbox's warm interpreter is not running; it ran as a fresh program and nothing was kept.",
    );
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('aaaaaaaa', 'bbbbbbbb') }), STATE_LINES.kept);
  });

  it('says the state ended with a sandbox that stopped during the call, and expects none after', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    assert.equal(
      states.settle('chat', { reset: false, succeeded: false, outcome: { from: '', now: '', kept: false, ended: true } }),
      'State: lost, because the sandbox stopped while this call ran; the next call starts from an empty state.',
    );
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'bbbbbbbb') }), STATE_LINES.kept);
  });

  it('says the state was given up when its holder failed the sandbox\'s check, before the call or after a failed one', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    assert.equal(
      states.settle('chat', { reset: false, succeeded: false, outcome: { from: 'aaaaaaaa', now: '', kept: false, dropped: 'threads' } }),
      "State: given up, because the process holding it failed the sandbox's check after this call (it was running threads); the next call starts from an empty state.",
    );
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'bbbbbbbb') });
    assert.equal(
      states.settle('chat', { reset: false, succeeded: true, outcome: { from: '', now: 'cccccccc', kept: true, dropped: 'sockets' } }),
      "The earlier state was given up, because the process holding it failed the sandbox's check (it held sockets open), so this call started from an empty state. State: kept for the next call.",
    );
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('cccccccc', 'dddddddd') }), STATE_LINES.kept);
  });

  it('makes a chat whose state the storage budget deleted start its next call from an empty state, says so once, and only for that chat', () => {
    const states = new SessionStates();
    states.settle('chat', { reset: false, succeeded: true, outcome: kept('', 'aaaaaaaa') });
    states.settle('other', { reset: false, succeeded: true, outcome: kept('', 'cccccccc') });
    assert.deepEqual(states.chats(), ['chat', 'other']);
    states.dropState('chat');
    assert.deepEqual([states.stateDropped('chat'), states.stateDropped('other')], [true, false]);
    assert.equal(
      states.settle('chat', { reset: true, succeeded: true, outcome: kept('', 'bbbbbbbb') }),
      "This chat's earlier state was deleted to keep the stored runs within the storage budget, so this call started from an empty state. State: kept for the next call.",
    );
    assert.equal(states.stateDropped('chat'), false);
    assert.equal(states.settle('chat', { reset: false, succeeded: true, outcome: kept('bbbbbbbb', 'dddddddd') }), STATE_LINES.kept);
    // A call that went another way (back, or to another chat's state) took it without a word of it.
    states.dropState('other');
    assert.equal(states.settle('other', { reset: false, succeeded: true, outcome: kept('eeeeeeee', 'ffffffff') }), `${STATE_LINES.lost} ${STATE_LINES.kept}`);
    assert.equal(states.stateDropped('other'), false);
  });
});
