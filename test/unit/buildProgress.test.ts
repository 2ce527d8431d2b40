import * as assert from 'node:assert/strict';
import { BuildOutput, type BuildProgress } from '../../src/docker/images/buildProgress';

function feed(events: object[]): { progress: BuildProgress[]; lines: string[]; output: BuildOutput } {
  const progress: BuildProgress[] = [];
  const lines: string[] = [];
  const output = new BuildOutput((p) => progress.push(p), (l) => lines.push(l));
  for (const e of events) output.event(e);
  output.end();
  return { progress, lines, output };
}

describe('image build output (unit)', () => {
  it('turns apt output into downloading and installing n of m, ignoring apt-get update', () => {
    const { progress, lines } = feed([
      { stream: 'Step 3/6 : RUN apt-get update  && apt-get install ...\n' },
      { stream: ' ---> Running in 0123456789ab\n' },
      { stream: 'Get:1 http://mirror.invalid/debian bookworm InRelease [151 kB]\nGet:2 http://mirror.invalid/debian bookworm/main amd64 Packages [8787 kB]\n' },
      { stream: 'Reading package lists...\n0 upgraded, 3 newly installed, 0 to remove and 0 not upgraded.\nNeed to get 9 MB of archives.\n' },
      { stream: 'Get:1 http://mirror.invalid/debian bookworm/main amd64 libssl3 amd64 3.0.15-1 [2025 kB]\nGet:2 http://mirror.invalid/debian' },
      { stream: ' bookworm/main amd64 python3.11-minimal amd64 3.11.2-6 [2064 kB]\n' },
      { stream: 'Unpacking libssl3:amd64 (3.0.15-1) ...\r\nSetting up libssl3:amd64 (3.0.15-1) ...\nSetting up python3-pandas (1.5.3+dfsg-2) ...\n' },
      { stream: 'Step 5/6 : RUN MPLCONFIGDIR=/tmp/codeact-mpl PYTHONDONTWRITEBYTECODE=1 python3 /usr/share/codeact-sandbox/list-distributions.py a b\n' },
      { aux: { ID: 'sha256:feed' } },
      { stream: 'Successfully built feed' },
    ]);
    assert.deepEqual(
      progress.map((p) => [p.phase, p.message, p.done, p.total]),
      [
        ['downloading-packages', 'Downloading packages: 0 of 3', 0, 3],
        ['downloading-packages', 'Downloading packages: 1 of 3 (libssl3)', 1, 3],
        ['downloading-packages', 'Downloading packages: 2 of 3 (python3.11-minimal)', 2, 3],
        ['installing-packages', 'Installing packages: 1 of 3 (libssl3)', 1, 3],
        ['installing-packages', 'Installing packages: 2 of 3 (python3-pandas)', 2, 3],
        ['checking-packages', 'Checking that every package imports', undefined, undefined],
      ],
    );
    // Every line reaches the log whole, even one split across two events; the last one without a newline too.
    assert.ok(lines.includes('Get:2 http://mirror.invalid/debian bookworm/main amd64 python3.11-minimal amd64 3.11.2-6 [2064 kB]'), lines.join('\n'));
    assert.equal(lines[lines.length - 1], 'Successfully built feed');
  });

  it('turns pip output into collected packages, then installing m', () => {
    const { progress } = feed([
      { stream: 'Collecting numpy==2.2.4\n  Downloading numpy-2.2.4-cp312-cp312-manylinux_2_17_x86_64.whl (16.1 MB)\nCollecting pandas==2.2.3\n' },
      { stream: 'Installing collected packages: pytz, numpy, pandas\nSuccessfully installed numpy-2.2.4 pandas-2.2.3 pytz-2025.1\n' },
    ]);
    assert.deepEqual(
      progress.map((p) => p.message),
      ['Downloading packages: 1 so far (numpy==2.2.4)', 'Downloading packages: 2 so far (pandas==2.2.3)', 'Installing 3 packages', 'Installed 3 packages'],
    );
  });

  it('keeps the engine error and the image id', () => {
    const { output, lines } = feed([
      { aux: { ID: 'sha256:abc' } },
      { errorDetail: { code: 100, message: "The command '/bin/sh -c apt-get update' returned a non-zero code: 100" }, error: 'ignored in favour of errorDetail' },
    ]);
    assert.equal(output.imageId, 'sha256:abc');
    assert.equal(output.error, "The command '/bin/sh -c apt-get update' returned a non-zero code: 100");
    assert.deepEqual(lines, ["error: The command '/bin/sh -c apt-get update' returned a non-zero code: 100"]);
  });
});
